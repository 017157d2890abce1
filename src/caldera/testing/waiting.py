"""Waiting in tests on something another thread or process brings about, with a deadline.

Tests never sleep: they wait for a condition. Given the `threading.Condition` that whoever
changes the state notifies, `wait_until` wakes as soon as it is notified; without one it looks
again every `interval` seconds (for state outside the process: files, processes). Either way it
gives up at the deadline with an AssertionError naming what it waited for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from caldera.utils.clock import SystemClock

# The deadline of a run of real PyTorch training in a test (import torch, gloo's rendezvous, a few epochs on
# CPU): about 15 s on a quiet 2-core machine. It only detects a hang, it never measures speed: at load 20
# (a flake hunt beside four other workers) three processes each importing torch at a tenth of a core
# printed nothing in 120 s, so it is set for that.
TRAINING_DEADLINE = 600.0


def wait_until(
    predicate: Callable[[], object],
    timeout: float = 10.0,
    what: str = "the condition",
    *,
    condition: threading.Condition | None = None,
    interval: float = 0.01,
) -> None:
    """Return once `predicate()` is true; raise AssertionError if it is not within `timeout` seconds.

    With `condition`, the predicate is evaluated while holding it, each time it is notified.
    """
    if condition is not None:
        with condition:
            if condition.wait_for(predicate, timeout):
                return
        raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
    clock = SystemClock()
    deadline = clock.monotonic() + timeout
    pause = threading.Event()  # never set: waiting on it is a bounded pause between looks
    while not predicate():
        left = deadline - clock.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        pause.wait(min(interval, left))
