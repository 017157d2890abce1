"""Which part of a trace a run replays: a time window, a job count, an arrival-rate scale, the Pollux/Sia sample.

Every choice is a pure function of the rows and a seed (`random.Random(seed)`),
so the same trace, options and seed give the same jobs on every machine.

The Pollux/Sia sample follows Sia's `generate_workload.py` (defaults `-n 160 -d
8`): keep jobs that ran at least a minute and used less than 1,000 GPU-hours,
take an 8-hour window of submissions and 160 of its jobs uniformly without
replacement. Sia fixes the window at hour 2 of its trace; the first weeks of the
derived Philly table are nearly empty (no eligible job in hours 0–100), so here
the seed also picks the window: a whole hour, uniformly among those whose 8-hour
window holds at least 160 eligible jobs. Jobs larger than the cluster are left
out too (on 64 GPUs a 128-GPU gang would never start). Pollux and Sia then swap
each job for a model-training run of their own; caldera keeps the trace's
duration and GPU count, so its sample carries the trace's full, heavy-tailed
work (about 1,400 GPU-hours on average for 160 jobs: more than 20 hours of the
whole 64-GPU cluster, arriving in 8).
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, Protocol, TypeVar

from caldera.core.errors import FieldError, ValidationError

POLLUX_JOBS = 160
POLLUX_HOURS = 8.0
POLLUX_MIN_DURATION = 60.0  # seconds
POLLUX_MAX_GPU_SECONDS = 1000 * 3600.0


class Row(Protocol):
    @property
    def line(self) -> int: ...
    @property
    def submit(self) -> float: ...
    @property
    def duration(self) -> float: ...
    @property
    def gpus(self) -> float: ...


R = TypeVar("R", bound=Row)


@dataclass(frozen=True, slots=True)
class Window:
    """Both ends in seconds after the trace's first submission, or both as dates (`dates`); None: open."""

    start: float | None
    end: float | None
    dates: bool = False

    def bounds(self, first_submit: float) -> tuple[float, float]:
        """The window in the trace's own time."""
        base = 0.0 if self.dates else first_submit
        lo = -math.inf if self.start is None else base + self.start
        hi = math.inf if self.end is None else base + self.end
        return lo, hi


@dataclass(frozen=True, slots=True)
class Sample(Generic[R]):
    rows: list[R]  # sorted by submit time
    origin: float  # the trace time that becomes t = 0 of the run
    rate_scale: float  # arrival times are divided by it: 2 = twice the arrival rate
    description: str  # what was taken, in words, for reports


def _instant(text: str) -> tuple[float, bool] | None:
    """Seconds (False) or a UTC date/datetime as a Unix time (True); None: neither."""
    try:
        return float(text), False
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp(), True
    except ValueError:
        return None


def parse_window(text: str) -> Window:
    """`START:END` in seconds (`3600:32400`) or dates (`2017-10-02:2017-10-03T08:00:00`); a side may be empty.

    Datetimes contain colons: the split is the one colon where both sides parse."""
    for i, ch in enumerate(text):
        if ch != ":":
            continue
        left, right = text[:i].strip(), text[i + 1 :].strip()
        lo = _instant(left) if left else None
        hi = _instant(right) if right else None
        if (left and lo is None) or (right and hi is None):
            continue
        kinds = {x[1] for x in (lo, hi) if x is not None}
        if len(kinds) > 1:
            raise _error("--window", "write both ends as seconds or both as dates")
        start, end = (lo[0] if lo else None), (hi[0] if hi else None)
        if start is not None and end is not None and end <= start:
            raise _error("--window", f"{text!r}: the end must come after the start")
        return Window(start, end, dates=kinds == {True})
    raise _error("--window", f"{text!r} is not START:END in seconds or dates (YYYY-MM-DD[THH:MM:SS])")


def _error(option: str, rule: str) -> ValidationError:
    return ValidationError([FieldError(option, rule)])


def in_window(rows: Sequence[R], lo: float, hi: float) -> list[R]:
    """The rows submitted in [lo, hi), for rows sorted by submit time."""
    submits = [r.submit for r in rows]
    return list(rows[bisect.bisect_left(submits, lo) : bisect.bisect_left(submits, hi)])


def take(
    rows: Sequence[R],
    *,
    window: Window | None = None,
    jobs: int | None = None,
    rate_scale: float = 1.0,
    times_are_dates: bool = True,
) -> Sample[R]:
    """A window of the trace (rows sorted by submit time), then its first `jobs` jobs, arrivals scaled."""
    if not rows:
        return Sample([], 0.0, rate_scale, "no jobs")
    first = rows[0].submit
    words = []
    chosen = list(rows)
    origin = first
    if window is not None:
        if window.dates and not times_are_dates:
            raise _error("--window", "this trace's times are seconds from its start: write the window in seconds")
        lo, hi = window.bounds(first)
        chosen = in_window(rows, lo, hi)
        origin = max(lo, first)
        words.append(f"submissions in [{_when(lo, first)}, {_when(hi, first)})")
    if jobs is not None:
        chosen = chosen[:jobs]
        words.append(f"the first {len(chosen)} jobs")
    if rate_scale != 1.0:
        words.append(f"arrivals {rate_scale:g}× as fast")
    return Sample(chosen, origin, rate_scale, ", ".join(words) or "the whole trace")


def _when(t: float, first: float) -> str:
    if math.isinf(t):
        return "start" if t < 0 else "end"
    if first > 1e9:  # a Unix time: show a date
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M")
    return f"{t:g} s"


def pollux_eligible(rows: Sequence[R], max_gpus: float) -> list[R]:
    return [
        r
        for r in rows
        if r.duration >= POLLUX_MIN_DURATION and r.duration * r.gpus < POLLUX_MAX_GPU_SECONDS and r.gpus <= max_gpus
    ]


def pollux_sample(
    rows: Sequence[R],
    *,
    seed: int,
    max_gpus: float,
    jobs: int = POLLUX_JOBS,
    hours: float = POLLUX_HOURS,
    window: Window | None = None,
    rate_scale: float = 1.0,
) -> Sample[R]:
    """The Pollux/Sia sample (see the module docstring); `window` fixes the window instead of drawing it."""
    rng = random.Random(seed)
    eligible = pollux_eligible(rows, max_gpus)
    if not eligible:
        raise _error("--sample", "no job of the trace is eligible (ran >= 60 s, < 1,000 GPU-hours, fits the cluster)")
    span = hours * 3600.0
    if window is not None:
        lo, hi = window.bounds(rows[0].submit)
        lo = max(lo, eligible[0].submit)
        hi = min(hi, lo + span) if window.end is None else hi
    else:
        starts = _busy_hours(eligible, span, jobs)
        if not starts:
            raise _error("--sample", f"no {hours:g}-hour window of the trace holds {jobs} eligible jobs")
        lo = rng.choice(starts)
        hi = lo + span
    pool = in_window(eligible, lo, hi)
    if len(pool) < jobs:
        raise _error("--window", f"the window holds {len(pool)} eligible jobs, fewer than the {jobs} to sample")
    picked = sorted(rng.sample(pool, jobs), key=lambda r: (r.submit, r.line))
    first = rows[0].submit
    words = f"Pollux/Sia sample: {jobs} of the {len(pool)} eligible jobs submitted in [{_when(lo, first)}, {_when(hi, first)}), seed {seed}"
    if rate_scale != 1.0:
        words += f", arrivals {rate_scale:g}× as fast"
    return Sample(picked, lo, rate_scale, words)


def _busy_hours(eligible: Sequence[Row], span: float, jobs: int) -> list[float]:
    """Whole-hour window starts (from the first eligible submission's hour) whose window holds >= `jobs` jobs."""
    submits = [r.submit for r in eligible]
    hour0 = math.floor(submits[0] / 3600.0) * 3600.0
    out = []
    t = hour0
    while t <= submits[-1]:
        if bisect.bisect_left(submits, t + span) - bisect.bisect_left(submits, t) >= jobs:
            out.append(t)
        t += 3600.0
    return out
