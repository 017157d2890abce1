"""PNG plots of a comparison (matplotlib, Agg backend: no display needed).

- `jct_cdf.png`: the CDF of job completion times, one line per policy, log time axis.
- `utilisation.png`: GPU utilisation over time, one line per policy.
- `queue_shares.png`: per-queue share of the cluster's GPUs over time, one panel
  per policy, stacked, with each queue's deserved share as a dashed line (the
  largest queues by GPU-time; the rest summed as "other").

Series are averaged onto a grid of at most `POINTS` bins before plotting: a
full-Philly run has hundreds of thousands of steps, more than a figure can show.

For people: legends sit outside the axes (they never cover a line), utilisation
is in % as in the tables, each policy has its own line style as well as colour
and a policy whose line is the same as an earlier one's says so in the legend
("= las"), since it is drawn under it. Queues named by a trace's hex ids
(Philly's virtual clusters) are labelled "VC <id>".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from caldera.sim.compare import PolicyRun
from caldera.sim.metrics import Floats, StepSeries

if TYPE_CHECKING:
    from matplotlib.axes import Axes

POINTS = 600
DPI = 90  # small files: the study's plots live in the repository
TOP_QUEUES = 6
FILES = ("jct_cdf.png", "utilisation.png", "queue_shares.png")
STYLES = ("-", "--", "-.", ":")
_HEX_ID = re.compile(r"[0-9a-f]{6,}")


def queue_label(name: str) -> str:
    """A queue as a legend shows it: a trace's bare hex id reads as the virtual cluster it is."""
    if not name:
        return "-"
    return f"VC {name}" if _HEX_ID.fullmatch(name) else name


def same_as(series: Sequence[Floats], names: Sequence[str]) -> list[str]:
    """Legend labels: each name, with "(= earlier)" when its series equals an earlier one's (drawn under it)."""
    out = []
    for i, (s, name) in enumerate(zip(series, names, strict=True)):
        twin = next((names[j] for j in range(i) if series[j].shape == s.shape and np.allclose(series[j], s)), None)
        out.append(name if twin is None else f"{name} (= {twin})")
    return out


def _style(i: int) -> dict[str, object]:
    """Colour, dash and width per policy: lines that coincide still show each other's dashes."""
    return {"color": f"C{i % 10}", "linestyle": STYLES[i % len(STYLES)], "linewidth": 2.2 - 0.25 * (i % 4)}


def binned(series: StepSeries, start: float, end: float, points: int = POINTS) -> tuple[Floats, Floats]:
    """Bin centres and the time-weighted mean of the series in each bin (per column)."""
    edges = np.linspace(start, end, points + 1) if end > start else np.array([start, start + 1.0])
    t = np.append(series.times, series.end)
    values = series.values if series.values.ndim == 2 else series.values[:, None]
    # The integral of a step series at x: the area of whole steps before x plus the part of the step under x.
    areas = np.concatenate(([np.zeros(values.shape[1])], np.cumsum(np.diff(t)[:, None] * values, axis=0)))
    idx = np.clip(np.searchsorted(t, edges, side="right") - 1, 0, len(t) - 2)
    integral = areas[idx] + (np.clip(edges, t[0], t[-1]) - t[idx])[:, None] * values[idx]
    mean = np.diff(integral, axis=0) / np.diff(edges)[:, None]
    centres = (edges[:-1] + edges[1:]) / 2.0
    out = mean if series.values.ndim == 2 else mean[:, 0]
    return centres, np.asarray(out, dtype=np.float64)


def _hours_axis(runs: Sequence[PolicyRun]) -> tuple[float, float, float, str]:
    start = min((float(r.utilisation.times[0]) for r in runs), default=0.0)
    end = max((r.utilisation.end for r in runs), default=1.0)
    scale, unit = (3600.0, "hours") if end - start > 3 * 3600 else (60.0, "minutes")
    return start, end, scale, unit


def write_plots(runs: Sequence[PolicyRun], directory: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # before pyplot: no display on servers and in CI
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / name for name in FILES]
    start, end, scale, unit = _hours_axis(runs)

    fig, ax = plt.subplots(figsize=(9, 4.5))
    cdfs = [np.array(r.jcts) / scale for r in runs]
    for i, (r, x, label) in enumerate(zip(runs, cdfs, same_as(cdfs, [r.policy for r in runs]), strict=True)):
        if len(x):
            y = np.arange(1, len(x) + 1) / r.jobs
            ax.step(x, y, where="post", label=label, **_style(i))  # type: ignore[arg-type]
    ax.set_xscale("log")
    ax.set_xlabel(f"job completion time ({unit}, log)")
    ax.set_ylabel("fraction of jobs finished")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.set_title("JCT CDF")
    fig.tight_layout()
    fig.savefig(paths[0], dpi=DPI)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(10, 4.5))
    lines = [binned(r.utilisation, start, end) for r in runs]
    labels = same_as([y for _, y in lines], [r.policy for r in runs])
    for i, ((x, y), label) in enumerate(zip(lines, labels, strict=True)):
        ax.plot((x - start) / scale, 100.0 * y, label=label, **_style(i))  # type: ignore[arg-type]
    ax.set_xlabel(f"time since the first submission ({unit})")
    ax.set_ylabel("GPUs held (% of the cluster's)")
    ax.set_ylim(0, 105)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.set_title("GPU utilisation over time")
    fig.tight_layout()
    fig.savefig(paths[1], dpi=DPI)
    plt.close(fig)

    fig, axes = plt.subplots(len(runs), 1, figsize=(10, 2.6 * len(runs) + 0.6), sharex=True, squeeze=False)
    for ax, r in zip(axes[:, 0], runs, strict=True):
        _shares_panel(ax, r, start, end, scale)
    axes[-1, 0].set_xlabel(f"time since the first submission ({unit})")
    fig.suptitle("Queue shares of the cluster's GPUs (dashed: deserved share)")
    fig.tight_layout()
    fig.savefig(paths[2], dpi=DPI)
    plt.close(fig)
    return paths


def _shares_panel(ax: Axes, r: PolicyRun, start: float, end: float, scale: float) -> None:
    s = r.shares
    x, held = binned(s.held, start, end)
    _, fair = binned(s.deserved, start, end)
    t = (x - start) / scale
    order = np.argsort(-held.sum(axis=0), kind="stable")
    top = [int(i) for i in order[:TOP_QUEUES]]
    rest = [int(i) for i in order[TOP_QUEUES:]]
    layers = [held[:, i] for i in top] + ([held[:, rest].sum(axis=1)] if rest else [])
    labels = [queue_label(s.queues[i]) for i in top] + (["other"] if rest else [])
    if layers:
        colours = [f"C{k}" for k in range(len(layers))]
        ax.stackplot(t, *(100.0 * layer for layer in layers), labels=labels, colors=colours, alpha=0.75)
        for k, i in enumerate(top):
            ax.plot(t, 100.0 * fair[:, i], linestyle="--", linewidth=0.9, color=colours[k])
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_ylim(0, 105)
    ax.set_ylabel("share (%)")
    ax.set_title(r.policy, fontsize=10)
    ax.grid(alpha=0.3)
