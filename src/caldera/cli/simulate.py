"""`caldera simulate`: replay a workload on a described cluster with the real scheduler and controller.

Every problem with the inputs (a file that cannot be read, YAML that does not
parse, a field that breaks a rule) is a CalderaError naming the file and the
field path, which the entry point prints as one line with exit code 2.
"""

from __future__ import annotations

import json
import math

import click

from caldera.cli.render import print_timeline
from caldera.scheduler.config import default_config, parse_config
from caldera.scheduler.scheduler import Scheduler
from caldera.sim.engine import Simulation
from caldera.sim.inputs import load, read_text
from caldera.sim.report import build


def _seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and (not math.isfinite(value) or value < 0):
        raise click.BadParameter(f"{value:g} is not a number of seconds >= 0", ctx, param)
    return value


@click.command()
@click.option("--cluster", "cluster_path", required=True, type=click.Path(dir_okay=False), help="CLUSTER.yaml")
@click.option("--workload", "workload_path", required=True, type=click.Path(dir_okay=False), help="WORKLOAD.yaml")
@click.option("--scheduler-config", "config_path", type=click.Path(dir_okay=False), help="Volcano scheduler conf")
@click.option("--until", type=float, callback=_seconds, help="stop the virtual clock at this many seconds")
@click.option("-o", "--output", type=click.Choice(["json", "table"]), default="table", show_default=True)
def simulate(cluster_path: str, workload_path: str, config_path: str | None, until: float | None, output: str) -> None:
    """Replay WORKLOAD on CLUSTER on a virtual clock and report what happened."""
    config = parse_config(read_text(config_path), config_path) if config_path else default_config()
    cluster, workload = load(cluster_path, workload_path)
    sim = Simulation(cluster, workload, Scheduler(config), until=until)
    sim.run()
    report = build(sim)
    if output == "json":
        click.echo(json.dumps(report, sort_keys=False))
    else:
        print_timeline(report)
