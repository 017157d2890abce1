"""Pod attempts: one record per run of a pod, for reports (`caldera simulate`) and `describe`.

A pod restarted in place, or deleted and re-created under the same name, gets a
new attempt with the next number; numbers count per pod name and never go back.
Invariant: a pod has at most one attempt in progress (`running`), and an attempt
ends exactly once (moved to `finished`, in the order attempts ended, when `keep_finished`:
the simulator's report reads them; a long-lived daemon does not keep them, nor, once a
deleted job's pods are gone, their numbers: `forget`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from caldera.core import objects as o


@dataclass(slots=True)
class PodAttempt:
    """One run of a pod: a pod restarted in place or re-created is a new attempt."""

    name: str
    namespace: str
    job: str
    task: str
    attempt: int
    node: str = ""
    start: float | None = None
    end: float | None = None
    phase: str = o.POD_PENDING
    exit_code: int | None = None
    resources: Mapping[str, float] | None = None


class Attempts:
    __slots__ = ("_numbers", "finished", "keep_finished", "running")

    def __init__(self, keep_finished: bool = True) -> None:
        self.keep_finished = keep_finished
        self.finished: list[PodAttempt] = []  # ended attempts, in the order they ended
        self.running: dict[str, PodAttempt] = {}  # pod key → the attempt in progress
        self._numbers: dict[str, int] = {}  # pod key → number of its latest attempt

    def next_number(self, pod_key: str) -> int:
        """The number the pod's next attempt will get (how many it has had)."""
        return self._numbers.get(pod_key, -1) + 1

    def begin(self, pod: o.Pod, node: str, now: float) -> PodAttempt:
        """A run of `pod` on `node` starts now; an attempt still in progress ends first, unknown."""
        self.end(pod.key, o.POD_UNKNOWN, None, now)
        n = self.next_number(pod.key)
        self._numbers[pod.key] = n
        attempt = PodAttempt(
            pod.name,
            pod.metadata.namespace,
            pod.job,
            pod.task,
            n,
            node,
            now,
            None,
            o.POD_RUNNING,
            None,
            pod.spec.requests(),
        )
        self.running[pod.key] = attempt
        return attempt

    def restore(self, pod: o.Pod, number: int, running: bool) -> None:
        """A pod as a previous daemon left it: `number` attempts so far, the last one still running or not."""
        self._numbers[pod.key] = number
        if running:
            self.running[pod.key] = PodAttempt(
                pod.name,
                pod.namespace,
                pod.job,
                pod.task,
                number,
                pod.node_name,
                pod.status.start_time,
                None,
                o.POD_RUNNING,
                None,
                pod.spec.requests(),
            )

    def end(self, pod_key: str, phase: str, exit_code: int | None, now: float) -> None:
        """The pod's attempt in progress, if any, ended now with `phase` and `exit_code`."""
        attempt = self.running.pop(pod_key, None)
        if attempt is not None and self.keep_finished:
            self.finished.append(replace(attempt, end=now, phase=phase, exit_code=exit_code))

    def forget(self, pod_key: str) -> None:
        """The pod is gone with its job: a pod of the same name in a job created later starts again at 0."""
        self.running.pop(pod_key, None)
        self._numbers.pop(pod_key, None)
