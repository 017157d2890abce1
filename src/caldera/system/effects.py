"""Process starts and stops held until the turn that decided them is in the store.

The runtime asks for a pod's process while the plane settles, before the turn is
committed. Started at once, a process could outlive a `kill -9` that took the decision with
it: the restarted daemon would not know the pod runs and could start it a second time. So
the runtime talks to `HeldEffects`, which queues the starts and stops, and the loop
`release`s them, in the order they were asked for, once the commit succeeded.

A start the executor refuses (the pod's process runs already, the command cannot be
prepared) comes back as the pod's end, through the same path as any process event, so the
job's policies decide what follows.

For the fault tests only: with CALDERA_FAULT_KILL_BEFORE_START=PREFIX in its environment the
daemon SIGKILLs itself just before starting a pod whose key begins with PREFIX, i.e. after the
commit that decided the start: the window a restart must handle. Unset (always, but in those
tests), nothing happens.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass

from caldera.backends.local import LocalExecutor, ProcessEvent, ProcessSpec
from caldera.utils.clock import Clock

log = logging.getLogger("caldera.daemon")
REFUSED = 126  # a start the executor refused ends as a command that could not be run does in a shell
KILL_BEFORE_START = "CALDERA_FAULT_KILL_BEFORE_START"


@dataclass(frozen=True, slots=True)
class _Start:
    spec: ProcessSpec


@dataclass(frozen=True, slots=True)
class _Stop:
    key: str
    grace: float | None


class HeldEffects:
    """The executor's `run` and `stop`, held until `release`; only the loop's thread calls it."""

    def __init__(self, executor: LocalExecutor, report: Callable[[ProcessEvent], None], clock: Clock) -> None:
        self._executor = executor
        self._report = report
        self._clock = clock
        self._held: list[_Start | _Stop] = []
        self._kill_before = os.environ.get(KILL_BEFORE_START, "")  # a fault test's; "" (off) otherwise

    def run(self, spec: ProcessSpec) -> None:
        self._held.append(_Start(spec))

    def stop(self, key: str, grace: float | None = None) -> None:
        self._held.append(_Stop(key, grace))

    def __len__(self) -> int:
        return len(self._held)

    def release(self) -> None:
        held, self._held = self._held, []
        for effect in held:
            if isinstance(effect, _Stop):
                self._executor.stop(effect.key, effect.grace)
                continue
            if self._kill_before and effect.spec.key.startswith(self._kill_before):
                os.kill(os.getpid(), signal.SIGKILL)
            try:
                self._executor.run(effect.spec)
            except (OSError, ValueError, RuntimeError) as e:
                log.warning("pod %s: not started: %s", effect.spec.key, e)
                note = f"not started: {e}"
                event = ProcessEvent(effect.spec.key, "exited", REFUSED, effect.spec.attempt, self._clock.now(), note)
                self._report(event)
