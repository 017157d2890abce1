"""`caldera explain JOB`: why a job waits, per node class and for its queue, and whether it ever could run.

The verdict first: nothing holds the job up, it waits for capacity or its queue ("not now"),
or it can never run as the nodes and its queue are ("never": a task no node takes, a gang
larger than the cluster, a queue capability below its minimum). Then its queue (capability,
in use, the job's minimum), then one row per node class and task: how many pods of the task
the gang needs, how many one empty node of the class holds, how many fit in what is idle now,
and what blocks the rest. `-o json|yaml` gives the daemon's explanation as is.
"""

from __future__ import annotations

import click

from caldera.cli.common import Verb, cluster, complete_jobs, namespace_option, table, text
from caldera.cli.output import emit, print_table
from caldera.system.api import JSON


@click.command(cls=Verb)
@click.argument("job", shell_complete=complete_jobs)
@namespace_option
@click.option(
    "-o", "--output", type=click.Choice(["text", "json", "yaml"]), default="text", show_default=True, help="format"
)
@click.pass_context
def explain(ctx: click.Context, job: str, namespace: str, output: str) -> None:
    """Explain why JOB waits: per node class and for its queue, what blocks it, now or for ever."""
    e = cluster(ctx).explain_job(namespace, job)
    if output != "text":
        emit(e, output)
        return
    click.echo(
        f"Job {text(e.get('namespace'))}/{text(e.get('job'))}: {text(e.get('phase'))}, PodGroup {text(e.get('podGroup'))}"
    )
    click.echo(verdict(e))
    for why in e.get("never") or []:
        click.echo(f"  never: {text(why)}")
    for why in e.get("now") or []:
        click.echo(f"  now:   {text(why)}")
    for c in e.get("conditions") or []:
        if c.get("status") == "True" and c.get("message"):
            click.echo(f"  scheduler: {text(c.get('message'))}")
    q = e.get("queue")
    if q:
        click.echo()
        click.echo(f"Queue {text(q.get('name'))} ({text(q.get('state'))})")
        click.echo(f"  capability: {resources(q.get('capability')) or 'unlimited'}")
        click.echo(f"  in use:     {resources(q.get('allocated')) or 'nothing'}")
        click.echo(f"  the job's minimum: {resources(q.get('minimum')) or 'nothing'}")
    classes = e.get("nodeClasses") or []
    if classes:
        click.echo()
        t = table(
            "CLASS", "NODES", "ALLOCATABLE", "TASK", "NEED", "PER NODE", "FITS NOW", "BLOCKS", title="Node classes"
        )
        for i, c in enumerate(classes):
            nodes = c.get("nodes") or []
            shown = ", ".join(nodes[:3]) + (f" (+{len(nodes) - 3})" if len(nodes) > 3 else "")
            for j, f in enumerate(c.get("tasks") or []):
                first = j == 0
                t.add_row(
                    str(i + 1) if first else "",
                    text(shown) if first else "",
                    text(resources(c.get("allocatable"))) if first else "",
                    text(f.get("task")),
                    text(f.get("need")),
                    text(f.get("perNode")),
                    text(f.get("fitsNow")),
                    text(f.get("blocks")),
                )
        print_table(t)


def verdict(e: JSON) -> str:
    w = e.get("waiting")
    if not w:
        return "Nothing holds it up."
    if w.get("never"):
        return f"{text(w.get('reason'))}: it can never run as the nodes and its queue are."
    return f"{text(w.get('reason'))}: it waits, not for ever: {text(w.get('message'))}"


def resources(r: object) -> str:
    return ", ".join(f"{k}={v}" for k, v in r.items()) if isinstance(r, dict) else ""
