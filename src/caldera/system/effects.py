"""Process starts and stops held until the turn that decided them is in the store, then done in order off the loop.

The runtime asks for a pod's process while the plane settles, before the turn is
committed. Started at once, a process could outlive a `kill -9` that took the decision with
it: the restarted daemon would not know the pod runs and could start it a second time. So
the runtime talks to `HeldEffects`, which holds the starts and stops, and the loop
`release`s them once the commit succeeded.

Released effects are done by STARTERS starter threads, each pod's by the same one (chosen by
its key), in the order they were asked for: starting a process costs the loop nothing (a spawn
waits ~20 ms for the child on a busy machine, without the GIL: several starters wait at once),
and the loop answers its callers without waiting for their pods' processes. That is safe because
the start is in the store: a daemon killed with starts still queued starts them on restart,
under the same attempt (`adoption.py`). Order is kept per pod: a stop asked after a start is
done after it, whatever the threads' backlogs (pods are independent: a pod's GPUs and ports are
handed to another only once its process is gone). `running()` counts the starts not done yet, so
nobody takes a pod whose start is queued for gone (its directory removed, its name reused).

A start the executor refuses (the pod's process runs already, the command cannot be
prepared) comes back as the pod's end, through the same path as any process event, so the
job's policies decide what follows.

For the fault tests only: with CALDERA_FAULT_KILL_BEFORE_START=PREFIX in its environment the
daemon SIGKILLs itself just before starting a pod whose key begins with PREFIX, i.e. after the
commit that decided the start: the window a restart must handle. Unset (always, but in those
tests), nothing happens.
"""

from __future__ import annotations

import collections
import logging
import os
import signal
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from caldera.backends.local import LocalExecutor, ProcessEvent, ProcessSpec
from caldera.utils.clock import Clock

log = logging.getLogger("caldera.daemon")
REFUSED = 126  # a start the executor refused ends as a command that could not be run does in a shell
KILL_BEFORE_START = "CALDERA_FAULT_KILL_BEFORE_START"
STARTERS = 4  # starter threads: a spawn mostly waits for the child (no GIL held), so a few overlap well


@dataclass(frozen=True, slots=True)
class _Start:
    spec: ProcessSpec


@dataclass(frozen=True, slots=True)
class _Stop:
    key: str
    grace: float | None


class HeldEffects:
    """The executor's `run` and `stop`, held until `release` (called on the loop's thread), then done
    in order per pod by the starter threads. `running()` and `drain()` may be called from any thread."""

    def __init__(
        self, executor: LocalExecutor, report: Callable[[ProcessEvent], None], clock: Clock, starters: int = STARTERS
    ) -> None:
        self._executor = executor
        self._report = report
        self._clock = clock
        self._held: list[_Start | _Stop] = []  # asked for this turn, not released yet
        # One lock; a condition per starter thread (a release wakes only the threads it gave work to)
        # and one for whoever waits for the queues to empty (`drain`).
        lock = threading.Lock()
        self._cond = threading.Condition(lock)
        self._wakes = [threading.Condition(lock) for _ in range(starters)]
        # released, not done yet: one queue per starter thread, a pod's effects always in the same one
        self._queues: list[collections.deque[_Start | _Stop]] = [collections.deque() for _ in range(starters)]
        self._starting: collections.Counter[str] = collections.Counter()  # pod key → its starts released, not done
        self._busy = 0  # effects taken off a queue and not done yet
        self._closed = False
        self._kill_before = os.environ.get(KILL_BEFORE_START, "")  # a fault test's; "" (off) otherwise
        self._threads = [
            threading.Thread(target=self._work, args=(i,), name=f"caldera-starter-{i}", daemon=True)
            for i in range(starters)
        ]
        for t in self._threads:
            t.start()

    def run(self, spec: ProcessSpec) -> None:
        self._held.append(_Start(spec))

    def stop(self, key: str, grace: float | None = None) -> None:
        self._held.append(_Stop(key, grace))

    def __len__(self) -> int:
        return len(self._held)

    def release(self) -> None:
        """Hand what the committed turn asked for to the starter threads; returns at once."""
        held, self._held = self._held, []
        if not held:
            return
        queues = self._queues
        with self._cond:
            if self._closed:
                raise RuntimeError("the starter is closed")
            given = set()
            for effect in held:
                i = self.thread_of(effect.spec.key if isinstance(effect, _Start) else effect.key)
                queues[i].append(effect)
                given.add(i)
            self._starting.update(e.spec.key for e in held if isinstance(e, _Start))
            for i in given:
                self._wakes[i].notify()

    def thread_of(self, key: str) -> int:
        """Which starter thread does pod `key`'s effects (always the same one: they are done in order)."""
        return zlib.crc32(key.encode()) % len(self._queues)

    def running(self) -> list[str]:
        """The pods whose process runs or whose start is released but not done yet."""
        with self._cond:  # the queued starts first: one done meanwhile is then in the executor's list
            queued = set(self._starting)
        return sorted(queued.union(self._executor.running()))

    def drain(self, timeout: float = 60.0) -> None:
        """Wait until every released effect is done, then let the starter threads end."""
        with self._cond:
            idle = self._cond.wait_for(lambda: not any(self._queues) and not self._busy, timeout=timeout)
            if not idle:
                left = sum(len(q) for q in self._queues)
                raise TimeoutError(f"pods still being started or stopped: {left} effects left")
            self._closed = True
            for wake in self._wakes:
                wake.notify()
        for t in self._threads:
            t.join(timeout=timeout)

    # ------------------------------------------------------------ the starter threads

    def _work(self, i: int) -> None:
        queue, wake = self._queues[i], self._wakes[i]
        while True:
            with self._cond:
                wake.wait_for(lambda: queue or self._closed)
                if not queue:
                    return
                effect = queue.popleft()
                self._busy += 1
            try:
                self._do(effect)
            except Exception:
                log.exception("failed to start or stop a pod's process")
            finally:
                with self._cond:
                    if isinstance(effect, _Start):
                        left = self._starting[effect.spec.key] - 1
                        if left > 0:
                            self._starting[effect.spec.key] = left
                        else:
                            del self._starting[effect.spec.key]
                    self._busy -= 1
                    if not self._busy:
                        self._cond.notify_all()  # `drain` waits for this

    def _do(self, effect: _Start | _Stop) -> None:
        if isinstance(effect, _Stop):
            self._executor.stop(effect.key, effect.grace)
            return
        if self._kill_before and effect.spec.key.startswith(self._kill_before):
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            self._executor.run(effect.spec)
        except (OSError, ValueError, RuntimeError) as e:
            log.warning("pod %s: not started: %s", effect.spec.key, e)
            note = f"not started: {e}"
            self._report(ProcessEvent(effect.spec.key, "exited", REFUSED, effect.spec.attempt, self._clock.now(), note))
