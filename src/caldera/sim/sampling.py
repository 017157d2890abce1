"""Which part of a trace a run replays: a time window, a job count, an arrival-rate scale.

Every choice is a pure function of the rows (and, for the Pollux/Sia sample in
`pollux.py`, a seed), so the same trace and options give the same jobs on every
machine.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, Protocol, TypeVar

from caldera.core.errors import FieldError, ValidationError


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
            raise error("--window", "write both ends as seconds or both as dates")
        start, end = (lo[0] if lo else None), (hi[0] if hi else None)
        if start is not None and end is not None and end <= start:
            raise error("--window", f"{text!r}: the end must come after the start")
        return Window(start, end, dates=kinds == {True})
    raise error("--window", f"{text!r} is not START:END in seconds or dates (YYYY-MM-DD[THH:MM:SS])")


def error(option: str, rule: str) -> ValidationError:
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
            raise error("--window", "this trace's times are seconds from its start: write the window in seconds")
        lo, hi = window.bounds(first)
        chosen = in_window(rows, lo, hi)
        origin = max(lo, first)
        words.append(f"submissions in [{when(lo, first)}, {when(hi, first)})")
    if jobs is not None:
        chosen = chosen[:jobs]
        words.append(f"the first {len(chosen)} jobs")
    if rate_scale != 1.0:
        words.append(f"arrivals {rate_scale:g}× as fast")
    return Sample(chosen, origin, rate_scale, ", ".join(words) or "the whole trace")


def when(t: float, first: float) -> str:
    if math.isinf(t):
        return "start" if t < 0 else "end"
    if first > 1e9:  # a Unix time: show a date
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M")
    return f"{t:g} s"
