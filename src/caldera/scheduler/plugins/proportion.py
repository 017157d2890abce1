"""proportion: queues share the cluster by weight (Volcano's water-filling), capped by capability.

Each queue's `deserved` is grown in rounds: the remaining resources are split
by weight among queues that still want more, and a queue's deserved never
exceeds its request (what its jobs ask for), its capability or the cluster
minus others' guarantees, nor falls below its own guarantee. So idle capacity
goes to whoever asks for it, and a queue above its deserved share gives back
when another queue needs its share (reclaim).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from caldera.core import objects as o
from caldera.scheduler.framework import PERMIT, REJECT, Plugin
from caldera.scheduler.session import Session
from caldera.scheduler.state import JobInfo, QueueInfo, TaskInfo, Vector

_EPS = 1e-9


def real_capability(ssn: Session, queue: QueueInfo) -> Vector:
    """min(capability, cluster total − the guarantees of all other queues)."""
    total = ssn.state.total
    others = sum((q.guarantee for q in ssn.state.queues.values() if q is not queue), np.zeros_like(total))
    return np.minimum(queue.capability, np.maximum(total - others, 0.0))


def fits(request: Vector, limit: Vector, dims: Vector | None = None) -> bool:
    """request ≤ limit on the dimensions `dims` asks for (all requested dimensions if None)."""
    wanted = (request > 0) if dims is None else (dims > 0)
    return bool(np.all(request[wanted] <= limit[wanted] + _EPS))


def reclaim_victims(ssn: Session, deserved: Mapping[str, Vector], candidates: list[TaskInfo]) -> list[TaskInfo]:
    """Victims only from queues above their deserved share, taken while the queue stays above it."""
    left: dict[str, Vector] = {}
    victims = []
    for c in candidates:
        q = ssn.state.queues.get(c.job.queue)
        if q is None:
            continue
        allocated = left.get(q.name)
        if allocated is None:
            allocated = q.allocated.copy()
        d = deserved.get(q.name)
        if d is None or not fits(allocated, d, allocated):
            allocated = allocated - c.req
            victims.append(c)
        left[q.name] = allocated
    return victims


class Proportion(Plugin):
    name = "proportion"

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        super().__init__(ssn, args)
        self.capability = {q.name: real_capability(ssn, q) for q in ssn.state.queues.values()}
        self.deserved = self._water_fill()

    def _water_fill(self) -> dict[str, Vector]:
        state = self.ssn.state
        queues = [q for q in state.queues.values() if q.state != o.QUEUE_CLOSED or q.request.any()]
        remaining = state.total.copy()
        deserved = {q.name: np.zeros_like(remaining) for q in state.queues.values()}
        met: set[str] = set()
        for _ in range(64):
            hungry = [q for q in queues if q.name not in met]
            weight = sum(q.weight for q in hungry)
            if not hungry or weight == 0:
                break
            increased = np.zeros_like(remaining)
            for q in hungry:
                old = deserved[q.name]
                new = old + remaining * (q.weight / weight)
                new = np.minimum(np.minimum(new, self.capability[q.name]), q.request)
                new = np.maximum(new, np.minimum(q.guarantee, q.request) if q.request.any() else q.guarantee)
                if np.all(new >= q.request - _EPS) or np.allclose(new, old):
                    met.add(q.name)
                increased += new - old
                deserved[q.name] = new
            remaining = np.maximum(remaining - increased, 0.0)
            if np.all(remaining <= _EPS):
                break
        return deserved

    def share(self, queue: QueueInfo) -> float:
        d = self.deserved.get(queue.name)
        if d is None:
            return 0.0
        ratio = np.divide(queue.allocated, d, out=np.zeros_like(d), where=d > 0)
        return float(ratio.max()) if ratio.size else 0.0

    def queue_order(self, queue: QueueInfo) -> tuple[object, ...]:
        return (-queue.priority, self.share(queue))

    def overused(self, queue: QueueInfo) -> bool:
        d = self.deserved.get(queue.name)
        if d is None:
            return True
        return bool(np.all(d <= queue.allocated + _EPS))

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if queue.state != o.QUEUE_OPEN and not queue.allocated.any() and not task.job.allocated.any():
            return False
        return fits(queue.allocated + task.req, self.deserved.get(queue.name, queue.allocated), task.req)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self.allocatable(queue, task)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return reclaim_victims(self.ssn, self.deserved, candidates)

    def job_enqueueable(self, job: JobInfo) -> int:
        queue = self.ssn.state.queues.get(job.queue)
        if queue is None or queue.state != o.QUEUE_OPEN:
            return REJECT
        need = job.min_resources + queue.allocated + queue.inqueue
        return PERMIT if fits(need, self.capability[queue.name], job.min_resources) else REJECT
