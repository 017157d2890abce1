"""Process starts and stops held until the turn that decided them is in the store.

The runtime asks for a pod's process while the plane settles, before the turn is
committed. Started at once, a process could outlive a `kill -9` that took the decision with
it: the restarted daemon would not know the pod runs and could start it a second time. So
the runtime talks to `HeldEffects`, which queues the starts and stops, and the loop
`release`s them, in the order they were asked for, once the commit succeeded.

The released effects are carried out by one thread of their own, in order: spawning a
process takes a few milliseconds the loop spends on the next turn meanwhile, and a stop
still comes after the start it follows.

A start the executor refuses (the pod's process runs already, the command cannot be
prepared) comes back as the pod's end, through the same path as any process event, so the
job's policies decide what follows.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from caldera.backends.local import LocalExecutor, ProcessEvent, ProcessSpec
from caldera.utils.clock import Clock

log = logging.getLogger("caldera.daemon")
REFUSED = 126  # a start the executor refused ends as a command that could not be run does in a shell


@dataclass(frozen=True, slots=True)
class _Start:
    spec: ProcessSpec


@dataclass(frozen=True, slots=True)
class _Stop:
    key: str
    grace: float | None


class HeldEffects:
    """The executor's `run` and `stop`, held until `release`; only the loop's thread calls them."""

    def __init__(self, executor: LocalExecutor, report: Callable[[ProcessEvent], None], clock: Clock) -> None:
        self._executor = executor
        self._report = report
        self._clock = clock
        self._held: list[_Start | _Stop] = []
        self._released: queue.SimpleQueue[list[_Start | _Stop] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._carry_out, name="caldera-effects", daemon=True)
        self._thread.start()

    def run(self, spec: ProcessSpec) -> None:
        self._held.append(_Start(spec))

    def stop(self, key: str, grace: float | None = None) -> None:
        self._held.append(_Stop(key, grace))

    def release(self) -> None:
        """Carry out what was held (on the effects' thread, in the order asked)."""
        if self._held:
            self._released.put(self._held)
            self._held = []

    def close(self) -> None:
        """Carry out what was released, then stop (what is still held is dropped: it was never committed)."""
        self._released.put(None)
        self._thread.join()

    def _carry_out(self) -> None:
        while (effects := self._released.get()) is not None:
            try:
                self._apply(effects)
            except Exception:
                log.exception("starting or stopping processes failed")

    def _apply(self, effects: list[_Start | _Stop]) -> None:
        for effect in effects:
            if isinstance(effect, _Stop):
                self._executor.stop(effect.key, effect.grace)
                continue
            try:
                self._executor.run(effect.spec)
            except (OSError, ValueError, RuntimeError) as e:
                log.warning("pod %s: not started: %s", effect.spec.key, e)
                note = f"not started: {e}"
                event = ProcessEvent(effect.spec.key, "exited", REFUSED, effect.spec.attempt, self._clock.now(), note)
                self._report(event)
