"""The fake executor: pods "run" for a duration on the virtual clock and end with a given exit code.

Used by the simulator and by tests. It never calls back into its owner
directly: every outcome is scheduled as a timed callback (`schedule(time, fn)`),
so the owner processes it in time order, after the change that caused it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from caldera.core import objects as o

Schedule = Callable[[float, Callable[[], None]], None]


class PodSink(Protocol):
    """Who hears what happened to a pod."""

    def pod_exited(self, key: str, exit_code: int) -> None: ...

    def pod_stopped(self, key: str) -> None: ...


class FakeExecutor:
    def __init__(
        self, schedule: Schedule, now: Callable[[], float], run_of: Callable[[o.Pod], tuple[float | None, int]]
    ) -> None:
        self._schedule = schedule
        self._now = now
        self._run_of = run_of  # (duration or None for "until killed", exit code) of a pod's run
        self._generation: dict[str, int] = {}  # bumped per start/stop so stale endings are ignored
        self.sink: PodSink | None = None

    def start(self, pod: o.Pod, node: o.Node) -> None:
        gen = self._generation.get(pod.key, 0) + 1
        self._generation[pod.key] = gen
        duration, code = self._run_of(pod)
        if duration is not None:
            self._schedule(self._now() + duration, lambda: self._exit(pod.key, gen, code))

    def stop(self, pod: o.Pod) -> None:
        self._generation[pod.key] = self._generation.get(pod.key, 0) + 1
        key = pod.key
        self._schedule(self._now(), lambda: self._stopped(key))

    def kill(self, key: str, exit_code: int) -> None:
        """A fault: the pod's process dies now with `exit_code`."""
        self._generation[key] = self._generation.get(key, 0) + 1
        self._schedule(self._now(), lambda: self._deliver_exit(key, exit_code))

    def _exit(self, key: str, gen: int, code: int) -> None:
        if self._generation.get(key) == gen:
            self._deliver_exit(key, code)

    def _deliver_exit(self, key: str, code: int) -> None:
        assert self.sink is not None
        self.sink.pod_exited(key, code)

    def _stopped(self, key: str) -> None:
        assert self.sink is not None
        self.sink.pod_stopped(key)
