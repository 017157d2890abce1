"""The options `caldera simulate` and `caldera simulate compare` share: what to run on, and which part of it."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

from caldera.sim.costs import Costs, parse_costs
from caldera.sim.presets import PRESETS
from caldera.sim.sampling import parse_window
from caldera.sim.sources import SAMPLES, Inputs, Selection, load_inputs

F = TypeVar("F", bound=Callable[..., Any])


def seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and (not math.isfinite(value) or value < 0):
        raise click.BadParameter(f"{value:g} is not a number of seconds >= 0", ctx, param)
    return value


def _positive(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise click.BadParameter(f"{value:g} must be > 0", ctx, param)
    return value


def _costs(ctx: click.Context, param: click.Parameter, value: str) -> Costs:
    try:
        return parse_costs(value)
    except ValueError as e:
        raise click.BadParameter(str(e), ctx, param) from None


def costs_option(fn: F) -> F:
    """`--costs free|realistic|KEY=S,...`: what starting, preempting and spreading a gang costs (sim/costs.py)."""
    return click.option(
        "--costs",
        "costs",
        default="free",
        show_default=True,
        callback=_costs,
        metavar="MODEL",
        help="free, realistic (4 s start, 30 s resume, 8 s save, 0.25 spread), or e.g. realistic,spread=0",
    )(fn)


def workload_options(fn: F) -> F:
    """Add the cluster, workload, trace and sampling options to a command."""
    options = [
        click.option(
            "--cluster",
            "cluster",
            type=click.Path(dir_okay=False),
            help=f"CLUSTER.yaml, or preset:NAME ({', '.join(PRESETS)}); a trace brings its own default",
        ),
        click.option("--workload", "workload", type=click.Path(dir_okay=False), help="WORKLOAD.yaml"),
        click.option(
            "--trace",
            "trace",
            metavar="KIND[:PATH]",
            help="philly[:PATH] or alibaba-openb[:PATH] (default: the shared traces, or $CALDERA_TRACES)",
        ),
        click.option("--window", "window", metavar="START:END", help="submissions in this window (seconds or dates)"),
        click.option("--jobs", "jobs", type=click.IntRange(min=1), help="the first N jobs (with --sample: N jobs)"),
        click.option(
            "--rate-scale", "rate_scale", type=float, default=1.0, callback=_positive, help="arrivals X times as fast"
        ),
        click.option("--sample", "sample", type=click.Choice(SAMPLES), help="pollux: 160 jobs over 8 hours"),
        click.option("--seed", "seed", type=int, default=0, show_default=True, help="seed of the sample"),
        click.option(
            "--checkpoint-interval",
            "checkpoint",
            type=float,
            callback=seconds,
            help="trace jobs checkpoint every S seconds: a preempted one resumes from its last checkpoint",
        ),
        click.option(
            "--elastic",
            "elastic",
            is_flag=True,
            help="philly trace jobs elastic: half their GPUs to where their goodput peaks (sim/speedup.py)",
        ),
        click.option("--until", type=float, callback=seconds, help="stop the virtual clock at this many seconds"),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def inputs_from(options: dict[str, Any]) -> Inputs:
    """Load what the options name; warn (stderr) once per malformed trace row."""
    window = parse_window(options["window"]) if options.get("window") else None
    selection = Selection(
        window,
        options.get("jobs"),
        options.get("rate_scale") or 1.0,
        options.get("sample"),
        options.get("seed") or 0,
        options.get("checkpoint"),
        bool(options.get("elastic")),
    )
    inputs = load_inputs(options.get("cluster"), options.get("workload"), options.get("trace"), selection)
    for line in inputs.warnings:
        click.echo(f"caldera: warning: {line} (row skipped)", err=True)
    return inputs


def warn_count(inputs: Inputs) -> None:
    """The count of skipped rows, at the end, where it is seen after a long replay."""
    if inputs.warnings:
        n = len(inputs.warnings)
        click.echo(f"caldera: warning: {n} malformed trace row{'s' if n > 1 else ''} skipped", err=True)
