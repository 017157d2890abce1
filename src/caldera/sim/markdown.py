"""The comparison as text: one table (for the terminal and for report.md), report.md and results.json.

Times are in hours in every column and every run, so tables of different runs
compare at a glance (two decimals; three significant digits under 0.1 h, so a
workload of seconds still shows its numbers).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from caldera import __version__
from caldera.core.resources import GPU
from caldera.sim import speedup
from caldera.sim.compare import PolicyRun, job_gpus
from caldera.sim.costs import FREE, Costs
from caldera.sim.metrics import SIZE_CLASSES, size_class
from caldera.sim.plots import FILES
from caldera.sim.sources import Inputs


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What was run, for the report's header."""

    inputs: Inputs
    policies: tuple[str, ...]
    seed: int
    until: float | None = None
    command: str = ""
    costs: Costs = FREE


HOUR = 3600.0


def _unit(values: Sequence[float | None]) -> tuple[float, str]:
    """The unit of a time column: hours, whatever the values (fixed across runs)."""
    del values
    return HOUR, "h"


def _num(v: float | None, scale: float = 1.0, digits: int = 2) -> str:
    if v is None:
        return "-"
    x = v / scale
    if scale == HOUR and 0 < abs(x) < 0.1:
        return f"{x:.3g}"  # seconds-long runs keep their digits in hours
    return f"{x:,.{digits}f}"


def table(runs: Sequence[PolicyRun]) -> tuple[list[str], list[list[str]]]:
    """Headers and one row of cells per policy."""
    time_cols = {
        "avg JCT": [r.avg_jct for r in runs],
        "median JCT": [r.median_jct for r in runs],
        "p99 JCT": [r.p99_jct for r in runs],
        "avg queue delay": [r.avg_queue_delay for r in runs],
        "makespan": [r.makespan for r in runs],
    }
    units = {name: _unit(vals) for name, vals in time_cols.items()}
    largest = [r.largest_class for r in runs]
    wait_scale, wait_unit = _unit([w[1] if w else None for w in largest])
    headers = [
        "policy",
        *(f"{name} ({units[name][1]})" for name in time_cols),
        "GPU util",
        "Jain",
        f"max wait, largest class ({wait_unit})",
        "preemptions",
        "lost GPU-h",
        "idle GPU-h",
        "overhead GPU-h",
        "CPU ms/cycle",
    ]
    rows = []
    for i, r in enumerate(runs):
        lc = largest[i]
        finished = "" if r.finished == r.jobs else f" ({r.jobs - r.finished} unfinished)"
        rows.append(
            [
                r.policy + finished,
                *(_num(vals[i], units[name][0]) for name, vals in time_cols.items()),
                f"{100 * r.gpu_utilisation:.1f} %",
                _num(r.jain, digits=3),
                "-" if lc is None else f"{_num(lc[1], wait_scale)} [{lc[0]} GPUs]",
                str(r.preemptions),
                _num(r.lost_gpu_hours, digits=1),
                _num(r.idle_gpu_hours, digits=1),
                _num(r.overhead_gpu_hours, digits=1),
                _num(r.cpu_ms_per_cycle, digits=2),
            ]
        )
    return headers, rows


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    right = ["---"] + ["---:"] * (len(headers) - 1)
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(right) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def waits_table(runs: Sequence[PolicyRun]) -> str:
    classes = [c for c in SIZE_CLASSES if any(c in r.longest_wait for r in runs)]
    scale, unit = _unit([w for r in runs for w in r.longest_wait.values()])
    headers = ["policy", *(f"{c} GPU{'s' if c != '1' else ''} ({unit})" for c in classes)]
    rows = [[r.policy, *(_num(r.longest_wait.get(c), scale) for c in classes)] for r in runs]
    return markdown_table(headers, rows)


def cost_table(runs: Sequence[PolicyRun]) -> str:
    headers = ["policy", "scheduling cycles", "scheduler CPU (s)", "CPU ms/cycle", "whole run, wall (s)"]
    rows = [
        [r.policy, f"{r.cycles:,}", _num(r.cpu_seconds), _num(r.cpu_ms_per_cycle), _num(r.wall_seconds, digits=1)]
        for r in runs
    ]
    return markdown_table(headers, rows)


def describe(info: RunInfo) -> list[str]:
    i = info.inputs
    lines = [
        f"- workload: {i.trace_words}",
        f"- sample: {i.sample_words} ({len(i.workload.jobs):,} jobs)",
        f"- seed: {info.seed}",
        f"- cluster: {i.cluster_words}"
        + (
            ""
            if i.cluster_words.startswith("preset:")
            else f" ({len(i.cluster.nodes):,} nodes, {i.total_gpus:,.0f} GPUs)"
        ),
        f"- policies: {', '.join(info.policies)}",
        f"- {info.costs.words()}",
        f"- caldera {__version__}",
    ]
    if info.until is not None:
        lines.append(f"- virtual clock stopped at {info.until:g} s")
    if info.command:
        lines.append(f"- command: `{info.command}`")
    lines += [f"- note: {n}" for n in i.notes]
    if i.warnings:
        lines.append(f"- {len(i.warnings)} malformed trace rows skipped (first: {i.warnings[0]})")
    return lines


def report_markdown(runs: Sequence[PolicyRun], info: RunInfo, *, image_dir: str = ".") -> str:
    headers, rows = table(runs)
    parts = [
        "# Policy comparison",
        "",
        *describe(info),
        "",
        markdown_table(headers, rows),
        "",
        "Longest wait of a job, by size class (a job still waiting at the end counts with its wait so far):",
        "",
        waits_table(runs),
        "",
        "What the runs cost (CPU and wall times vary from run to run; everything above does not):",
        "",
        cost_table(runs),
        "",
    ]
    titles = ("JCT CDF", "GPU utilisation over time", "Queue shares over time")
    for title, name in zip(titles, FILES, strict=True):
        parts += [f"![{title}]({image_dir}/{name})", ""]
    return "\n".join(parts)


def results_json(runs: Sequence[PolicyRun], info: RunInfo) -> str:
    doc = {
        "caldera": __version__,
        "workload": info.inputs.trace_words,
        "sample": info.inputs.sample_words,
        "seed": info.seed,
        "cluster": info.inputs.cluster_words,
        "clusterGpus": info.inputs.total_gpus,
        "workGpuHours": round(work_gpu_hours(info.inputs), 6),
        "meanRunTime": mean_run_time(info.inputs),
        "medianRunByClass": median_run_by_class(info.inputs),
        "costs": {
            "startLatency": info.costs.start_latency,
            "resume": info.costs.resume,
            "preempt": info.costs.preempt,
            "spread": info.costs.spread,
        },
        "policies": [r.numbers() for r in runs],
    }
    return json.dumps(doc, indent=1)


def mean_run_time(inputs: Inputs) -> float | None:
    """The jobs' average run time in seconds (each job's longest task; jobs with an end): what no policy beats.

    A job cannot complete sooner than it runs, so no policy's average JCT is below this."""
    times = []
    for a in inputs.workload.jobs:
        durations = [a.run_of(t.name)[0] for t in a.job.spec.tasks]
        if durations and all(d is not None for d in durations):
            times.append(max(d for d in durations if d is not None))
    return round(sum(times) / len(times), 6) if times else None


def median_run_by_class(inputs: Inputs) -> dict[str, float]:
    """Per size class (metrics.size_class, by the GPUs a job asks for): its jobs' median run time in seconds.

    The yardstick of the longest waits: a class waits unboundedly when its longest wait grows past a few
    of its own run times."""
    by_class: dict[str, list[float]] = {}
    for a in inputs.workload.jobs:
        durations = [a.run_of(t.name)[0] for t in a.job.spec.tasks]
        if durations and all(d is not None for d in durations):
            run = max(d for d in durations if d is not None)
            by_class.setdefault(size_class(job_gpus(a)), []).append(run)
    return {c: round(statistics.median(by_class[c]), 6) for c in SIZE_CLASSES if c in by_class}


def work_gpu_hours(inputs: Inputs) -> float:
    """The GPU-hours the workload's jobs run for if nothing is lost: Σ GPUs × run time (jobs with an end)."""
    total = 0.0
    for a in inputs.workload.jobs:
        submitted = speedup.reference_of(a.job.metadata.annotations)
        for t in a.job.spec.tasks:
            duration, _ = a.run_of(t.name)
            if duration is not None:
                replicas = t.replicas if submitted is None else submitted  # an elastic job's duration is on these
                total += replicas * t.template.spec.requests().get(GPU, 0.0) / 1000.0 * duration
    return total / 3600.0


def write_report(runs: Sequence[PolicyRun], info: RunInfo, directory: Path) -> list[Path]:
    """report.md, results.json and the plots in `directory`."""
    from caldera.sim.plots import write_plots

    directory.mkdir(parents=True, exist_ok=True)
    pngs = write_plots(runs, directory)
    md = directory / "report.md"
    md.write_text(report_markdown(runs, info), encoding="utf-8")
    js = directory / "results.json"
    js.write_text(results_json(runs, info) + "\n", encoding="utf-8")
    return [md, js, *pngs]
