"""capacity: queues with explicit `deserved` shares (Volcano's capacity plugin).

A queue may use idle resources up to its capability; what it holds above its
`deserved` (default: its guarantee) can be reclaimed by queues below theirs.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from caldera.core import objects as o
from caldera.scheduler.framework import Plugin
from caldera.scheduler.plugins.proportion import Yielding, enqueue_vote, fits, real_capabilities, reclaim_victims
from caldera.scheduler.session import Session
from caldera.scheduler.state import JobInfo, QueueInfo, TaskInfo


class Capacity(Plugin):
    name = "capacity"

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        super().__init__(ssn, args)
        self.capability = real_capabilities(ssn.state)
        self.deserved = {
            q.name: np.minimum(q.deserved_spec if q.has_deserved else q.guarantee, self.capability[q.name])
            for q in ssn.state.queues.values()
        }
        self.yielding = Yielding(ssn)

    def share(self, queue: QueueInfo) -> float:
        d = self.deserved.get(queue.name)
        if d is None or not d.any():
            return float(queue.allocated.any())
        ratio = np.divide(queue.allocated, d, out=np.zeros_like(d), where=d > 0)
        return float(ratio.max())

    def queue_order(self, queue: QueueInfo) -> tuple[object, ...]:
        return (-queue.priority, self.share(queue))

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if queue.state != o.QUEUE_OPEN and not task.job.allocated.any():
            return False
        return fits(queue.allocated + task.req, self.capability[queue.name], task.req)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return fits(queue.allocated + task.req, self.deserved[queue.name], task.req)

    def reclaim_limit(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return reclaim_victims(self.ssn, self.deserved, candidates)

    def job_enqueueable(self, job: JobInfo) -> int:
        return enqueue_vote(self.ssn, job, self.capability, self.yielding)
