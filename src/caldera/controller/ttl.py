"""When finished jobs are to be deleted: Volcano's garbage collector (ttlSecondsAfterFinished) as a heap.

`watch` is told of a job that just finished; `due` pops the jobs whose deadline
has passed, earliest first, ties in the order they finished. Pure: the caller
passes `now` and deletes the jobs. Invariant: only a job that is still finished
and past its TTL is handed out, so entries for jobs deleted meanwhile (or, were
it possible, restarted) expire harmlessly.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from caldera.controller.pods import ttl_expired
from caldera.core.objects import FINISHED_JOB_PHASES, Job


class TtlQueue:
    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str]] = []  # (deadline, seq, job key)
        self._seq = 0

    def watch(self, job: Job) -> None:
        """`job` just finished: remember its deadline if it has a TTL."""
        ttl = job.spec.ttl_seconds_after_finished
        if ttl is None or job.status.phase not in FINISHED_JOB_PHASES:
            return
        finished_at = job.status.completion_time
        if finished_at is None:
            finished_at = job.status.last_transition_time
        self._seq += 1
        heapq.heappush(self._heap, (finished_at + ttl, self._seq, job.key))

    def due(self, now: float, jobs: Mapping[str, Job]) -> list[str]:
        """Pop the keys of the jobs in `jobs` whose TTL has passed at `now`."""
        out: list[str] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            key = heapq.heappop(heap)[2]
            job = jobs.get(key)
            if job is not None and ttl_expired(job, now):
                out.append(key)
        return out

    def next_due(self, jobs: Mapping[str, Job]) -> float | None:
        """The earliest deadline of a job still in `jobs`, or None."""
        heap = self._heap
        while heap and heap[0][2] not in jobs:  # deleted meanwhile
            heapq.heappop(heap)
        return heap[0][0] if heap else None
