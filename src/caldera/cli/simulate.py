"""`caldera simulate`: replay a workload or a trace on a cluster with the real scheduler and controller.

`caldera simulate --cluster C --workload W [-o json]` is issue 2's contract:
`-o json` has every job, pod and event. For people the default is a summary
(the same row of metrics as `simulate compare`, times in hours) and the jobs
(up to 200); `--pods` adds every pod attempt and event. `--trace` and the
sampling options replay a public trace instead.
`caldera simulate compare` (simulate_compare.py) runs several policies on one
workload. `simulate` is a click group that runs itself when no subcommand is
given, so both read naturally and the contract's command line stays as it was.

Every problem with the inputs (a file that cannot be read, YAML that does not
parse, a field that breaks a rule) is a CalderaError naming the file and the
field path, which the entry point prints as one line with exit code 2.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from caldera.cli.render import print_comparison, print_jobs, print_pods
from caldera.cli.simulate_compare import compare
from caldera.cli.simulate_options import costs_option, inputs_from, warn_count, workload_options
from caldera.scheduler.config import DEFAULT_POLICY, default_config, parse_config
from caldera.sim.compare import TimedScheduler, job_accounting, load_policy, measure
from caldera.sim.costs import Costs
from caldera.sim.engine import Simulation
from caldera.sim.inputs import read_text
from caldera.sim.markdown import table
from caldera.sim.report import build, collect

TIMELINE_MAX_JOBS = 200  # above this a per-job table is a wall of text: the summary only, JSON has it all


@click.group(invoke_without_command=True, subcommand_metavar="[compare ...]")
@workload_options
@costs_option
@click.option("--scheduler-config", "config_path", type=click.Path(dir_okay=False), help="Volcano scheduler conf")
@click.option(
    "--policy", "policy", help=f"a shipped policy by name (instead of --scheduler-config; default: {DEFAULT_POLICY})"
)
@click.option("-o", "--output", type=click.Choice(["json", "table"]), default="table", show_default=True)
@click.option("--pods", "pods", is_flag=True, help="also list every pod attempt and event (tables)")
@click.pass_context
def simulate(
    ctx: click.Context,
    /,
    config_path: str | None,
    policy: str | None,
    output: str,
    pods: bool,
    costs: Costs,
    **options: Any,
) -> None:
    """Replay a workload (or a trace) on a cluster on a virtual clock and report what happened."""
    if ctx.invoked_subcommand is not None:
        return  # `simulate compare ...`: its own options say everything
    if options["cluster"] is None and options["trace"] is None:
        raise click.UsageError("Missing option '--cluster'.", ctx)
    if options["workload"] is None and options["trace"] is None:
        raise click.UsageError("Missing option '--workload' (or --trace).", ctx)
    if config_path and policy:
        raise click.UsageError("give --scheduler-config or --policy, not both", ctx)
    if policy:
        config = load_policy(policy)[1]
    else:
        config = parse_config(read_text(config_path), config_path) if config_path else default_config()
    # The command is one run: the cycle collector would only re-traverse the inputs, the run's history
    # and the report as they grow (a fifth of the command's time), and would free nothing they hold.
    with _collector_paused():
        inputs = inputs_from(options)
        scheduler = TimedScheduler(config)
        sim = Simulation(inputs.cluster, inputs.workload, scheduler, until=options["until"], costs=costs)
        t0 = time.perf_counter()
        sim.run()
        wall = time.perf_counter() - t0
        report = build(sim)
        if output == "json":
            click.echo(json.dumps(report, sort_keys=False))
            warn_count(inputs)
            return
        label = policy or config_path or DEFAULT_POLICY
        run = measure(label, collect(sim), inputs, job_accounting(sim), scheduler.cycles, scheduler.cpu_seconds, wall)
        headers, rows = table([run])
        title = f"{inputs.trace_words}: {inputs.sample_words}, on {inputs.cluster_words}; {costs.words()}"
        print_comparison(headers, rows, title=title)
        if pods or len(report["jobs"]) <= TIMELINE_MAX_JOBS:
            print_jobs(report)
        else:
            click.echo(f"{len(report['jobs']):,} jobs: the per-job table is left out (-o json has every job)")
        if pods:
            print_pods(report)
        warn_count(inputs)


@contextmanager
def _collector_paused() -> Iterator[None]:
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            # Everything made meanwhile sits in the youngest generation: the collection the next
            # allocation sets off would traverse all of it. Moved to the oldest generation untraversed.
            gc.freeze()
            gc.enable()
            gc.unfreeze()


simulate.add_command(compare)
