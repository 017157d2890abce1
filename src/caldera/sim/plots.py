"""PNG plots of a comparison (matplotlib, Agg backend: no display needed).

- `jct_cdf.png`: the CDF of job completion times, one line per policy, log time axis.
- `utilisation.png`: GPU utilisation over time, one line per policy.
- `queue_shares.png`: per-queue share of the cluster's GPUs over time, one panel
  per policy, stacked, with each queue's deserved share as a dashed line (the
  largest queues by GPU-time; the rest summed as "other").

Series are averaged onto a grid of at most `POINTS` bins before plotting: a
full-Philly run has hundreds of thousands of steps, more than a figure can show.
"""

from __future__ import annotations

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

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in runs:
        if r.jcts:
            x = np.array(r.jcts) / scale
            y = np.arange(1, len(x) + 1) / r.jobs
            ax.step(x, y, where="post", label=r.policy)
    ax.set_xscale("log")
    ax.set_xlabel(f"job completion time ({unit}, log)")
    ax.set_ylabel("fraction of jobs finished")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("JCT CDF")
    fig.tight_layout()
    fig.savefig(paths[0], dpi=DPI)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for r in runs:
        x, y = binned(r.utilisation, start, end)
        ax.plot((x - start) / scale, y, label=r.policy, linewidth=1.2)
    ax.set_xlabel(f"time since the first submission ({unit})")
    ax.set_ylabel("GPUs held / cluster GPUs")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("GPU utilisation over time")
    fig.tight_layout()
    fig.savefig(paths[1], dpi=DPI)
    plt.close(fig)

    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 2.6 * len(runs) + 0.6), sharex=True, squeeze=False)
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
    labels = [s.queues[i] or "-" for i in top] + (["other"] if rest else [])
    if layers:
        colours = [f"C{k}" for k in range(len(layers))]
        ax.stackplot(t, *layers, labels=labels, colors=colours, alpha=0.75)
        for k, i in enumerate(top):
            ax.plot(t, fair[:, i], linestyle="--", linewidth=0.9, color=colours[k])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share")
    ax.set_title(r.policy, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right", ncol=2)
