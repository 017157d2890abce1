"""The Pollux/Sia sample of the Philly trace: 160 jobs arriving over 8 hours, for a 64-GPU cluster.

It follows the script that made Pollux's evaluation workloads (OSDI'21 artifact,
`petuum/adaptdl` branch `osdi21-artifact`, `simulator/workload.py`, defaults
`-s 2 -d 8 -n 160`; Sia's philly workloads have the same shape):

- Eligible: jobs that ran at least a minute and used less than 1,000 GPU-hours
  (and, here, fit the cluster: a 128-GPU gang never starts on 64 GPUs).
- Arrivals: every day of the trace is folded onto one: the pool is the eligible
  jobs submitted between 02:00 and 10:00 of any day, and a job arrives at its
  time of day minus 02:00. So arrivals follow the trace's daily rhythm, averaged
  over its months, not one day's bursts.
- 160 jobs are drawn from the pool uniformly without replacement (`random.Random(seed)`).
- Size classes by GPU-time: Small < 1, Medium < 10, Large < 100, XLarge < 1,000
  GPU-hours. Pollux runs each sampled job as a model of its class (CIFAR-10,
  DeepSpeech2/BERT, YOLOv3, ImageNet) trained to completion, from throughput
  models not available here; for Large and XLarge it draws the job's GPU count
  from the pool's jobs of the same class that ran at most 24 hours. caldera
  keeps each Small and Medium job as the trace has it (GPUs, duration) and runs
  each Large and XLarge job as such a same-class job of at most 24 hours (its
  GPUs and duration, drawn with `random.Random(seed + 4)` as workload.py draws
  the GPU count), so the sample's longest jobs are day-long training runs, as
  Pollux's are, not the trace's month-long single-GPU jobs, whose run time no
  scheduler can shorten and which would dominate the average JCT.

A job keeps the identity (line, queue) of the row drawn for its arrival. With a
`window`, the pool is the eligible jobs submitted in that stretch of the trace
instead, arriving at their offset into it (Sia's `generate_workload.py` does
this from hour 2 of its trace; the first weeks of this table are nearly empty,
so here the window is given explicitly).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic

from caldera.sim.sampling import R, Window, error, in_window, when

JOBS = 160
HOURS = 8.0
START_HOUR = 2.0  # workload.py's -s: the folded day starts at 02:00
MIN_DURATION = 60.0  # seconds
MAX_GPU_SECONDS = 1000 * 3600.0
STAND_IN_MAX_DURATION = 24 * 3600.0
CLASSES = ("Small", "Medium", "Large", "XLarge")  # < 1, < 10, < 100, < 1,000 GPU-hours
DAY = 86400.0


@dataclass(frozen=True, slots=True)
class Drawn(Generic[R]):
    """One job of the sample: the row drawn (its identity and arrival) and the row whose work it runs."""

    row: R
    at: float  # seconds into the run, before any rate scaling
    work: R  # `row` itself, or for a Large or XLarge row a same-class row of at most 24 hours

    @property
    def stand_in(self) -> bool:
        return self.work is not self.row


@dataclass(frozen=True, slots=True)
class PolluxSample(Generic[R]):
    jobs: list[Drawn[R]]  # by arrival (then line)
    rate_scale: float
    description: str


def size_class(row: R) -> int:
    """0 Small, 1 Medium, 2 Large, 3 XLarge (by GPU-hours: 1, 10, 100)."""
    gpu_hours = row.duration * row.gpus / 3600.0
    return 0 if gpu_hours < 1 else 1 if gpu_hours < 10 else 2 if gpu_hours < 100 else 3


def eligible(rows: Sequence[R], max_gpus: float) -> list[R]:
    return [
        r for r in rows if r.duration >= MIN_DURATION and r.duration * r.gpus < MAX_GPU_SECONDS and r.gpus <= max_gpus
    ]


def time_of_day(submit: float) -> float:
    """Seconds since START_HOUR of the submission's (UTC) day: the folded arrival time."""
    return (submit - START_HOUR * 3600.0) % DAY


def pollux_sample(
    rows: Sequence[R],
    *,
    seed: int,
    max_gpus: float,
    jobs: int = JOBS,
    hours: float = HOURS,
    window: Window | None = None,
    rate_scale: float = 1.0,
) -> PolluxSample[R]:
    """The Pollux/Sia sample of `rows` (sorted by submit time); see the module docstring."""
    if not 0 < hours <= 24:
        raise error("--sample", f"the sample spans {hours:g} hours: it must be more than 0 and at most 24")
    pool_of = eligible(rows, max_gpus)
    if not pool_of:
        raise error("--sample", "no job of the trace is eligible (ran >= 60 s, < 1,000 GPU-hours, fits the cluster)")
    span = hours * 3600.0
    first = rows[0].submit
    if window is None:
        pool = [r for r in pool_of if time_of_day(r.submit) < span]
        at = time_of_day
        where = f"between {_clock(START_HOUR)} and {_clock(START_HOUR + hours)} of any day"
        if len(pool) < jobs:
            raise error("--sample", f"only {len(pool)} eligible jobs were submitted {where}, fewer than {jobs}")
    else:
        lo, hi = window.bounds(first)
        lo = max(lo, pool_of[0].submit)
        hi = min(hi, lo + span) if window.end is None else hi
        pool = in_window(pool_of, lo, hi)
        start = lo

        def at(submit: float) -> float:
            return submit - start

        where = f"in [{when(lo, first)}, {when(hi, first)})"
        if len(pool) < jobs:
            raise error("--window", f"the window holds {len(pool)} eligible jobs, fewer than the {jobs} to sample")
    picked = sorted(random.Random(seed).sample(pool, jobs), key=lambda r: (at(r.submit), r.line))
    stand_ins = {c: [r for r in pool if size_class(r) == c and r.duration <= STAND_IN_MAX_DURATION] for c in (2, 3)}
    draw = random.Random(seed + 4)  # workload.py's rng3
    drawn: list[Drawn[R]] = []
    for r in picked:
        c = size_class(r)
        work = draw.choice(stand_ins[c]) if c >= 2 and stand_ins[c] else r
        drawn.append(Drawn(r, at(r.submit), work))
    words = f"Pollux/Sia sample: {jobs} of the {len(pool):,} eligible jobs submitted {where}, seed {seed}"
    swapped = sum(1 for d in drawn if d.stand_in)
    if swapped:
        words += f"; Large/XLarge jobs run as a same-class job of at most 24 h: {swapped}"
    if rate_scale != 1.0:
        words += f", arrivals {rate_scale:g}× as fast"
    return PolluxSample(drawn, rate_scale, words)


def _clock(hour: float) -> str:
    minutes = round(hour * 60) % (24 * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"
