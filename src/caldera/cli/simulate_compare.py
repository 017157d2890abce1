"""`caldera simulate compare --policies a,b,c`: several policies on the same workload, one table.

Each policy (a shipped name or a scheduler configuration file) replays the same
jobs on the same cluster; the table has one row per policy. `--report DIR` also
writes DIR/report.md (the table and what was run), DIR/results.json and the
plots. A progress bar on stderr follows each run's virtual clock.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from caldera.cli.render import print_comparison
from caldera.cli.simulate_options import costs_option, inputs_from, warn_count, workload_options
from caldera.sim.compare import PolicyRun, available_policies, load_policy, run_policy
from caldera.sim.costs import Costs
from caldera.sim.markdown import RunInfo, results_json, table, write_report
from caldera.sim.sources import Inputs


def _policy_list(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    if value is None or value == "all":
        return available_policies()
    names = tuple(p.strip() for p in value.split(",") if p.strip())
    if not names:
        raise click.BadParameter("name at least one policy", ctx, param)
    if len(set(names)) != len(names):
        raise click.BadParameter("a policy is named twice", ctx, param)
    return names


def _horizon(inputs: Inputs) -> float:
    """A guess of when the run ends, for the progress bar: the later of the last job's own end and all the
    work packed onto the whole cluster."""
    ends = [a.submit_time + (a.duration or 0.0) for a in inputs.workload.jobs]
    first = min((a.submit_time for a in inputs.workload.jobs), default=0.0)
    work = sum((a.duration or 0.0) * a.job.spec.tasks[0].replicas for a in inputs.workload.jobs if a.job.spec.tasks)
    packed = first + work / max(inputs.total_gpus, 1.0)
    return max([*ends, packed, 1.0])


@click.command()
@click.option("--policies", "policies", callback=_policy_list, help="comma-separated names or files (default: all)")
@workload_options
@costs_option
@click.option("--report", "report_dir", type=click.Path(file_okay=False), help="write report.md, results.json, PNGs")
@click.option("-o", "--output", type=click.Choice(["json", "table"]), default="table", show_default=True)
def compare(policies: tuple[str, ...], report_dir: str | None, output: str, costs: Costs, **options: Any) -> None:
    """Run several scheduler policies on the same workload and compare them."""
    if options["workload"] is None and options["trace"] is None:
        raise click.UsageError("Missing option '--workload' or '--trace'.")
    configs = [load_policy(p) for p in policies]  # every name checked before any run starts
    labels = [label for label, _ in configs]
    if len(set(labels)) != len(labels):
        raise click.UsageError(f"two policies have the same name: {', '.join(labels)}")
    inputs = inputs_from(options)
    horizon = _horizon(inputs)
    runs: list[PolicyRun] = []
    console = Console(stderr=True)
    with Progress(
        TextColumn("{task.description:<18}"),
        BarColumn(),
        TextColumn("{task.fields[clock]}"),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
        transient=False,
    ) as progress:
        for label, config in configs:
            task = progress.add_task(label, total=horizon, clock="")
            tick = _tick(progress, task)
            runs.append(run_policy(label, config, inputs, until=options["until"], on_cycle=tick, costs=costs))
            progress.update(task, completed=horizon, clock="done")
    info = RunInfo(inputs, tuple(labels), options["seed"], options["until"], _command_line(), costs)
    if output == "json":
        click.echo(results_json(runs, info))
    else:
        headers, rows = table(runs)
        print_comparison(headers, rows, title=f"{inputs.trace_words}: {inputs.sample_words}, on {inputs.cluster_words}")
    if report_dir is not None:
        written = write_report(runs, info, Path(report_dir))
        click.echo(f"wrote {', '.join(str(p) for p in written)}", err=True)
    warn_count(inputs)


def _tick(progress: Progress, task: Any) -> Callable[[float], None]:
    last = [0.0]

    def on_cycle(now: float) -> None:
        # A redraw per cycle would cost more than the cycle: only when the clock moved a little.
        if now - last[0] >= 60.0:
            last[0] = now
            progress.update(task, completed=now, clock=f"t = {now / 3600:.1f} h")

    return on_cycle


def _command_line() -> str:
    """The command as typed, for the report (`caldera` rather than the interpreter's path)."""
    args = sys.argv[1:]
    return "caldera " + " ".join(shlex.quote(a) for a in args)
