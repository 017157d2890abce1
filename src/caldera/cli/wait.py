"""`caldera wait JOB [--for PHASE] [--timeout S]`: block until a job reaches a phase.

Exit 0 when the job is in PHASE (default Completed); 1 when it ends in another
terminal phase (Completed, Failed, Terminated, Aborted) or the timeout passes; 2 for
an unknown job. The job is polled on the context's clock (tests use a manual one).
"""

from __future__ import annotations

import click

from caldera.cli.common import (
    FINISHED_JOB_PHASES,
    Verb,
    clock,
    cluster,
    complete_jobs,
    fail,
    namespace_option,
    pods_running,
    waiting,
)
from caldera.core.objects import JOB_PHASES

POLL_SECONDS = 0.5


@click.command(cls=Verb)
@click.argument("job", shell_complete=complete_jobs)
@namespace_option
@click.option(
    "--for",
    "phase",
    type=click.Choice(JOB_PHASES, case_sensitive=False),
    default="Completed",
    show_default=True,
    help="the phase to wait for",
)
@click.option("--timeout", type=click.FloatRange(min=0), help="give up after S seconds  [default: no limit]")
@click.option("--interval", type=click.FloatRange(min=0.01), default=POLL_SECONDS, show_default=True, hidden=True)
@click.pass_context
def wait(ctx: click.Context, job: str, namespace: str, phase: str, timeout: float | None, interval: float) -> None:
    """Wait until JOB is in PHASE; exit 1 if it ends otherwise or time runs out."""
    c, clk = cluster(ctx), clock(ctx)
    what = f"job {namespace}/{job}"
    deadline = None if timeout is None else clk.now() + timeout
    with waiting(f"waiting for {what} to be {phase}") as update:
        while True:
            summary = c.get_job(namespace, job)
            current = str(summary.get("phase"))
            if current == phase:
                break
            if current in FINISHED_JOB_PHASES:
                why = ": ".join(str(summary[k]) for k in ("reason", "message") if summary.get(k))
                fail(ctx, f"{what} is {current}, not {phase}" + (f" ({why})" if why else ""), 1)
            now = clk.now()
            if deadline is not None and now >= deadline:
                fail(ctx, f"timed out after {timeout:g}s waiting for {what} to be {phase} (it is {current})", 1)
            update(f"waiting for {what} to be {phase}: {current}, {pods_running(summary)} pods running")
            clk.sleep(interval if deadline is None else min(interval, deadline - now))
    click.echo(f"{what} is {phase}")
