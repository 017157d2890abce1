"""Scheduling-quality metrics: pure functions over job records and GPU-holding intervals.

Definitions (the study and `simulate compare` use exactly these):

- JCT = end − submit of a finished job; average, median (the mean of the two
  middle values for an even count) and p99 (nearest rank, as the `-o json`
  summary). Jobs that did not finish are counted apart, not averaged in.
- Queueing delay = start − submit of a started job (start: its minAvailable-th
  pod running); average and p99.
- Makespan = last end − first submit.
- GPU utilisation over time: GPUs held by pod attempts / cluster GPUs, a step
  series; its mean is taken over [first submit, first submit + makespan], which
  makes it equal to the report's `gpuUtilization`.
- Deserved share: at each instant, the cluster's GPUs water-filled over the
  queues that have demand (GPUs of their submitted, unfinished jobs, running or
  not) in proportion to their weights, no queue getting more than it asks for
  (max-min fairness, what Volcano's proportion plugin computes). A queue's share
  is the GPUs its pods hold / cluster GPUs.
- Jain's index over the demanding queues of held/deserved, averaged over time
  (weighted by duration) where some queue is served or waiting; 1 is perfectly fair.
- Longest wait per size class (1, 2-4, 5-8, 9-32, >32 GPUs): the most time a
  job of the class spent waiting, from its submission to its end (or the end
  of the run) minus the time its gang was up, so the waits after a preemption
  count too (a preemptive policy starts jobs at once and makes them wait
  later); where the simulator does not report up times, its queueing delay. A
  job still waiting at the end counts with its wait so far.
- Preemptions, lost and idle GPU-hours: the per-job counts the simulator
  reports (`preemptions`; `lostGpuSeconds`, progress thrown away back to the
  last checkpoint; `idleGpuSeconds`, GPUs held while the job's gang was below
  minAvailable, the waste of scheduling without gangs); 0 when not reported.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

SIZE_CLASSES = ("1", "2-4", "5-8", "9-32", ">32")
Floats = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class JobRecord:
    name: str
    queue: str
    gpus: float  # what the whole job asks for
    submit: float
    start: float | None
    end: float | None
    preemptions: int = 0
    lost_gpu_seconds: float = 0.0
    idle_gpu_seconds: float = 0.0  # GPUs its pods held while its gang was below minAvailable
    overhead_gpu_seconds: float = 0.0  # GPUs held through start-up delays and lost to spread placement
    run_seconds: float | None = None  # wall time its gang was up over all its runs (None: not reported)

    @property
    def jct(self) -> float | None:
        return None if self.end is None else self.end - self.submit


@dataclass(frozen=True, slots=True)
class Holding:
    """GPUs a pod attempt held over [start, end) (end: the run's end for one still running)."""

    queue: str
    gpus: float
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class StepSeries:
    """values[i] holds on [times[i], times[i + 1]); the last value until `end`."""

    times: Floats
    values: Floats  # shape (T,) or (T, Q)
    end: float

    def mean(self, start: float | None = None, end: float | None = None) -> Floats:
        """The time-weighted mean over [start, end) (default: the whole series), per column."""
        t0 = self.times[0] if start is None else start
        t1 = self.end if end is None else end
        if t1 <= t0 or len(self.times) == 0:
            return np.zeros(self.values.shape[1:])
        edges = np.clip(np.append(self.times, self.end), t0, t1)
        widths = np.diff(edges)
        return np.asarray(np.tensordot(widths, self.values, axes=(0, 0)) / (t1 - t0), dtype=np.float64)


def median(values: Sequence[float]) -> float | None:
    s = sorted(values)
    n = len(s)
    if n == 0:
        return None
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile, as the `-o json` summary's p99."""
    s = sorted(values)
    if not s:
        return None
    return s[max(1, math.ceil(p / 100.0 * len(s))) - 1]


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def jcts(jobs: Sequence[JobRecord]) -> list[float]:
    return [j for j in (job.jct for job in jobs) if j is not None]


def queue_delays(jobs: Sequence[JobRecord]) -> list[float]:
    return [j.start - j.submit for j in jobs if j.start is not None]


def makespan(jobs: Sequence[JobRecord]) -> float | None:
    ends = [j.end for j in jobs if j.end is not None]
    return max(ends) - min(j.submit for j in jobs) if ends else None


def size_class(gpus: float) -> str:
    if gpus <= 1:
        return "1"
    if gpus <= 4:
        return "2-4"
    if gpus <= 8:
        return "5-8"
    return "9-32" if gpus <= 32 else ">32"


def longest_waits(jobs: Sequence[JobRecord], horizon: float) -> dict[str, float]:
    """The longest wait per size class that has jobs; a job not started by `horizon` waited until then."""
    out: dict[str, float] = {}
    for j in jobs:
        if j.run_seconds is not None:
            wait = max((j.end if j.end is not None else max(horizon, j.submit)) - j.submit - j.run_seconds, 0.0)
        else:
            wait = (j.start if j.start is not None else max(horizon, j.submit)) - j.submit
        c = size_class(j.gpus)
        out[c] = max(out.get(c, 0.0), wait)
    return {c: out[c] for c in SIZE_CLASSES if c in out}


def utilisation(holdings: Sequence[Holding], total_gpus: float, start: float, end: float) -> StepSeries:
    """Held GPUs / cluster GPUs as a step series over [start, end)."""
    series = _steps([(h.start, h.end, 0, h.gpus) for h in holdings], 1, start, end)
    scale = 1.0 / total_gpus if total_gpus > 0 else 0.0
    return StepSeries(series.times, series.values[:, 0] * scale, series.end)


def _steps(changes: Sequence[tuple[float, float, int, float]], columns: int, start: float, end: float) -> StepSeries:
    """Sum of (from, to, column, amount) boxes as a step series with one column each, from `start` to `end`."""
    if not changes:
        return StepSeries(np.array([start]), np.zeros((1, columns)), end)
    arr = np.array(changes, dtype=np.float64)
    times = np.concatenate(([start], arr[:, 0], arr[:, 1]))
    uniq, inverse = np.unique(times, return_inverse=True)
    deltas = np.zeros((len(uniq), columns))
    n = len(arr)
    cols = arr[:, 2].astype(np.intp)
    np.add.at(deltas, (inverse[1 : n + 1], cols), arr[:, 3])
    np.add.at(deltas, (inverse[n + 1 :], cols), -arr[:, 3])
    values = np.cumsum(deltas, axis=0)
    values[np.abs(values) < 1e-9] = 0.0  # float drift after many +/- of the same amounts
    return StepSeries(uniq, values, max(end, float(uniq[-1])))


@dataclass(frozen=True, slots=True)
class Shares:
    """Per-queue held and deserved shares of the cluster's GPUs over time (columns = `queues`)."""

    queues: tuple[str, ...]
    held: StepSeries
    deserved: StepSeries


def shares(
    jobs: Sequence[JobRecord],
    holdings: Sequence[Holding],
    weights: Mapping[str, float],
    total_gpus: float,
    horizon: float,
) -> Shares:
    """Held and deserved shares per queue, on one common time grid (see the module docstring)."""
    queues = tuple(sorted({j.queue for j in jobs} | {h.queue for h in holdings}))
    col = {q: i for i, q in enumerate(queues)}
    start = min((j.submit for j in jobs), default=0.0)
    held_boxes = [(h.start, h.end, col[h.queue], h.gpus) for h in holdings]
    demand_boxes = [(j.submit, j.end if j.end is not None else horizon, col[j.queue], j.gpus) for j in jobs]
    # One grid for both: a zero-sized box at each end of every box of the other series.
    held = _steps(held_boxes + _marks(demand_boxes), len(queues), start, horizon)
    demand = _steps(demand_boxes + _marks(held_boxes), len(queues), start, horizon)
    w = np.array([weights.get(q, 1.0) for q in queues], dtype=np.float64)
    scale = 1.0 / total_gpus if total_gpus > 0 else 0.0
    fair = water_fill(total_gpus, demand.values, w)
    return Shares(
        queues,
        StepSeries(held.times, held.values * scale, held.end),
        StepSeries(demand.times, fair * scale, demand.end),
    )


def _marks(boxes: Sequence[tuple[float, float, int, float]]) -> list[tuple[float, float, int, float]]:
    return [(t, t, 0, 0.0) for a, b, _, _ in boxes for t in (a, b)]


def water_fill(capacity: float, demands: Floats, weights: Floats) -> Floats:
    """Max-min weighted fair allocation of `capacity`, one row of `demands` (T, Q) at a time, vectorised."""
    d = np.atleast_2d(np.maximum(demands, 0.0))
    alloc = np.zeros_like(d)
    active = d > 0
    left = np.full(d.shape[0], float(capacity))
    # Each round settles, in every row still filling, the queues asking for less than their offer; a row
    # where none does gives every queue left its offer and is done. So at most Q + 1 rounds.
    for _ in range(d.shape[1] + 1):
        if not active.any():
            break
        wsum = (weights * active).sum(axis=1)
        level = np.divide(left, wsum, out=np.zeros_like(left), where=wsum > 0)
        offer = level[:, None] * weights
        settled = active & (d <= offer)
        stuck = active.any(axis=1) & ~settled.any(axis=1)
        filled = active & stuck[:, None]
        give = np.where(settled, d, 0.0) + np.where(filled, offer, 0.0)
        alloc += give
        left -= give.sum(axis=1)
        active &= ~(settled | filled)
    return np.asarray(alloc, dtype=np.float64)


def jain(values: Sequence[float] | Floats) -> float | None:
    """Jain's fairness index (Σx)² / (n Σx²); None for no values, 1 when all are zero (all equally served)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return None
    sq = float((x * x).sum())
    return 1.0 if sq == 0 else float(x.sum() ** 2 / (x.size * sq))


def jain_over_time(s: Shares) -> float | None:
    """Jain's index of held/deserved over the queues deserving something, time-weighted."""
    held, fair = s.held.values, s.deserved.values
    widths = np.diff(np.append(s.held.times, s.held.end))
    mask = fair > 1e-12
    x = np.divide(held, fair, out=np.zeros_like(held), where=mask)
    n = mask.sum(axis=1)
    s1, s2 = x.sum(axis=1), (x * x).sum(axis=1)
    rows = (n > 0) & (widths > 0)
    if not rows.any():
        return None
    # All served queues equally at zero is "equally unserved": 1, as `jain` says.
    index = np.divide(s1 * s1, n * s2, out=np.ones_like(s1), where=s2 > 0)
    return float((index[rows] * widths[rows]).sum() / widths[rows].sum())
