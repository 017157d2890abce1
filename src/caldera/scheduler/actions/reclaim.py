"""reclaim: a queue below its deserved share takes back resources from queues above theirs.

Only pods of other queues marked `reclaimable` are candidates, and the queue
plugins' `reclaim_limit` (applied whatever the tiers) keeps each victim queue at
or above its own deserved share, so two queues at their share never take turns
evicting each other; among what is left, the `reclaimable` vote and the
gang-aware choice of `victims.py` decide, as in preempt.
"""

from __future__ import annotations

from caldera.scheduler.actions.preempt import evict_for, starving_jobs
from caldera.scheduler.framework import OVERUSED, PREEMPTIVE, RECLAIM_LIMIT, RECLAIMABLE
from caldera.scheduler.session import Session
from caldera.scheduler.state import ALLOCATED, TaskInfo, TaskStatus


def reclaim(ssn: Session) -> None:
    state = ssn.state
    for qname in sorted({state.jobs[k].queue for k in state.waiting}, key=lambda q: ssn.queue_key(state.queue(q))):
        queue = state.queue(qname)
        if ssn.call(OVERUSED, queue):
            continue
        pool: list[TaskInfo] | None = None  # the other reclaimable queues' tasks, gathered once per queue
        for job in starving_jobs(ssn, qname, "Reclaim"):
            first = next((t for t in job.tasks.values() if t.status is TaskStatus.PENDING), None)
            if first is None or not ssn.call(PREEMPTIVE, queue, first):
                continue
            if pool is None:
                pool = [  # placed tasks only: no task becomes placed while reclaim runs (see preempt)
                    t
                    for j in state.jobs.values()
                    if j.queue != qname and state.queue(j.queue).reclaimable
                    for t in j.tasks.values()
                    if t.status in ALLOCATED
                ]
            evict_for(ssn, job, pool, RECLAIMABLE, "Reclaim", limit=RECLAIM_LIMIT)
