"""The fake executor: pods "run" on the virtual clock and end with a given exit code.

Used by the simulator and by tests. It never calls back into its owner
directly: every outcome is scheduled as a timed callback (`schedule(time, fn)`),
so the owner processes it in time order, after the change that caused it.

When a run ends is a `Pacer`'s to say, if one is given: the simulator's says a
pod of a gang makes progress only while its gang runs, so ends move as other
pods start and stop. Without one, a pod runs its duration from the moment it
starts. A run restarted in place is the same pod (same uid) started again; a
re-created pod (new uid, same name) is not. Invariant: an end is delivered only
if no start, stop or kill of the pod came after it was timed and, with a pacer,
only if the pacer still says the run ends then.
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


class Pacer(Protocol):
    """How runs progress: told of every start, stop and end, it says when runs end."""

    def started(self, pod: o.Pod, duration: float | None, restart: bool, now: float) -> list[tuple[str, float]]:
        """A run of `pod` starts: the (pod key, end time) of every run whose end is now known (others' too)."""
        ...

    def stopped(self, key: str, now: float) -> list[tuple[str, float]] | None:
        """The run was stopped: the (pod key, end time) of other runs whose end it moved, if any."""
        ...

    def ended(self, key: str, now: float) -> None:
        """The run ended by itself (its time came, or its process died)."""
        ...

    def ends_now(self, key: str, now: float) -> bool: ...


class FakeExecutor:
    def __init__(
        self,
        schedule: Schedule,
        now: Callable[[], float],
        run_of: Callable[[o.Pod], tuple[float | None, int]],
        pacer: Pacer | None = None,
    ) -> None:
        self._schedule = schedule
        self._now = now
        self._run_of = run_of  # (duration or None for "until killed", exit code) of a pod's run
        self._pacer = pacer
        self._generation: dict[str, int] = {}  # bumped per start/stop so stale endings are ignored
        self._codes: dict[str, int] = {}  # pod key → exit code of its current run
        self._uids: dict[str, str] = {}  # pod key → uid of the pod last started under it
        self.sink: PodSink | None = None

    def start(self, pod: o.Pod, node: o.Node) -> None:
        key = pod.key
        gen = self._generation.get(key, 0) + 1
        self._generation[key] = gen
        duration, code = self._run_of(pod)
        self._codes[key] = code
        if self._pacer is None:
            if duration is not None:
                self._schedule(self._now() + duration, lambda: self._exit(key, gen, code))
            return
        restart = self._uids.get(key) == pod.metadata.uid
        self._uids[key] = pod.metadata.uid
        for other, at in self._pacer.started(pod, duration, restart, self._now()):
            self._time_end(other, at)

    def stop(self, pod: o.Pod) -> None:
        self._generation[pod.key] = self._generation.get(pod.key, 0) + 1
        key = pod.key
        if self._pacer is not None:
            for other, at in self._pacer.stopped(key, self._now()) or ():
                self._time_end(other, at)
        self._schedule(self._now(), lambda: self._stopped(key))

    def kill(self, key: str, exit_code: int) -> None:
        """A fault: the pod's process dies now with `exit_code`."""
        self._generation[key] = self._generation.get(key, 0) + 1
        self._schedule(self._now(), lambda: self._deliver_exit(key, exit_code))

    def _time_end(self, key: str, at: float) -> None:
        gen = self._generation.get(key, 0)
        self._schedule(at, lambda: self._exit(key, gen, self._codes.get(key, 0)))

    def _exit(self, key: str, gen: int, code: int) -> None:
        if self._generation.get(key) != gen:
            return
        if self._pacer is not None and not self._pacer.ends_now(key, self._now()):
            return
        self._deliver_exit(key, code)

    def _deliver_exit(self, key: str, code: int) -> None:
        assert self.sink is not None
        if self._pacer is not None:
            self._pacer.ended(key, self._now())  # before the sink, which may restart the pod in place
        self.sink.pod_exited(key, code)

    def _stopped(self, key: str) -> None:
        assert self.sink is not None
        self.sink.pod_stopped(key)
