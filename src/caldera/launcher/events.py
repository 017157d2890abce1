"""What the launcher's loop is told, through one queue, by the threads that only observe.

The watch says a job key changed (the loop re-reads them all), or that it broke; the
keep-alive says the lease expired, is presumed lost, or is refreshed again; a worker reaper
says a worker exited (`workers.WorkerExit`); a signal handler says the launcher was asked to
stop. The loop's thread alone acts on them.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass

from caldera.launcher.keepalive import LeaseState
from caldera.launcher.workers import WorkerExit


@dataclass(frozen=True, slots=True)
class Changed:
    revision: int


@dataclass(frozen=True, slots=True)
class WatchBroken:
    error: str


@dataclass(frozen=True, slots=True)
class Lease:
    state: LeaseState
    lease: int
    message: str


@dataclass(frozen=True, slots=True)
class Signalled:
    signum: int


Event = Changed | WatchBroken | Lease | WorkerExit | Signalled


def next_events(events: queue.SimpleQueue[Event], timeout: float) -> list[Event]:
    """The next event (waiting up to `timeout` seconds for it) and every one queued behind it."""
    found: list[Event] = []
    try:
        found.append(events.get(timeout=timeout) if timeout > 0 else events.get_nowait())
        while True:
            found.append(events.get_nowait())
    except queue.Empty:
        return found
