"""The one clock: nothing else in caldera reads time or sleeps.

`SystemClock` is wall time; `ManualClock` is a virtual clock that tests and the
simulator advance by hand, so behaviour that depends on time is deterministic.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since an arbitrary epoch (wall time for SystemClock)."""
        ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class ManualClock:
    """A clock that moves only when told to; `sleep` advances it."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += seconds

    def set(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"a clock cannot go backwards ({t} < {self._now})")
        self._now = t
