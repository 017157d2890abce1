"""preempt: within a queue, a starving job takes room from lower-priority jobs, then from its own tasks.

Between jobs: for each starving job (in job order), each of its waiting tasks is
placed on idle or releasing resources if possible, otherwise on the node where
the cheapest set of victims (see `victims.py`) makes room; victims are evicted
and the task pipelined onto the node. The statement is committed only if the
job then has its whole gang placed or pipelined; otherwise nothing is evicted.

Within a job (Volcano's second phase): each job still starving places its
waiting tasks, in task order, by evicting running tasks of its own that the
`preemptable` point allows (with the priority plugin: tasks of a lower priority,
a parameter server before workers), on the node where the fewest, lowest-priority
of them make room; each task's evictions are committed on their own, and the job
stops at the first task that finds no room.
"""

from __future__ import annotations

import numpy as np

from caldera.scheduler.actions.allocate import ACTIVE
from caldera.scheduler.framework import JOB_PIPELINED, JOB_STARVING, JOB_VALID, PREEMPTABLE, Point
from caldera.scheduler.session import Session
from caldera.scheduler.state import ALLOCATED, JobInfo, TaskInfo, TaskStatus
from caldera.scheduler.statement import Statement
from caldera.scheduler.victims import plan_eviction


def preempt(ssn: Session) -> None:
    state = ssn.state
    for qname in sorted({state.jobs[k].queue for k in state.waiting}, key=lambda q: ssn.queue_key(state.queue(q))):
        starving = starving_jobs(ssn, qname, "Preempt")
        if not starving:
            continue
        # The queue's placed tasks, gathered once (evict_for leaves out the starving job's own and those
        # evicted since): a victim is placed, and no task becomes placed while preempt runs.
        pool = [t for j in state.jobs.values() if j.queue == qname for t in j.tasks.values() if t.status in ALLOCATED]
        for job in starving:
            evict_for(ssn, job, pool, PREEMPTABLE, "Preempt")
        for job in starving:  # Volcano's second phase: between the tasks of one job
            evict_within(ssn, job)


def evict_within(ssn: Session, job: JobInfo) -> None:
    """Place the job's waiting tasks by evicting its own running tasks that `preemptable` allows."""
    for task in ssn.ordered_tasks([t for t in job.tasks.values() if t.status is TaskStatus.PENDING]):
        if task.best_effort:
            continue
        own = [t for t in job.tasks.values() if t.status in ALLOCATED and t is not task]
        victims = ssn.call(PREEMPTABLE, task, own) if own else []
        plan = _plan_within(ssn, task, victims)
        if plan is None:
            return
        node, chosen = plan
        stmt = Statement(ssn)
        for v in chosen:
            stmt.evict(v, "Preempt", f"preempted by {task.key} of the same job")
        stmt.pipeline(task, node)
        stmt.commit()
        ssn.touched.add(job.key)


def _plan_within(ssn: Session, task: TaskInfo, victims: list[TaskInfo]) -> tuple[int, list[TaskInfo]] | None:
    """The node where the fewest victims (lowest priority, then highest index first) make room for `task`."""
    if not victims:
        return None
    static = ssn.state.schedulable.copy()
    for r in ssn.static_rejections(task):
        static &= r.mask
    free = ssn.free(True)
    by_node: dict[int, list[TaskInfo]] = {}
    for v in victims:
        if v.node >= 0 and static[v.node]:
            by_node.setdefault(v.node, []).append(v)
    best: tuple[int, list[TaskInfo]] | None = None
    for node in sorted(by_node):
        need = task.req - free[:, node]
        chosen: list[TaskInfo] = []
        for v in sorted(by_node[node], key=lambda t: (t.priority, -t.index, t.key)):
            if np.all(need <= 0):
                break
            chosen.append(v)
            need = need - v.req
        if np.all(need <= 0) and chosen and (best is None or len(chosen) < len(best[1])):
            best = (node, chosen)
    return best


def starving_jobs(ssn: Session, queue: str, reason: str) -> list[JobInfo]:
    """The queue's jobs waiting below their gang minimum that `reason` (Preempt, Reclaim) may still help."""
    state = ssn.state
    jobs = [
        j
        for j in (state.jobs[k] for k in state.waiting)
        if j.queue == queue
        and j.pg_phase in ACTIVE
        and j.evict_failed_at.get(reason) != state.version
        and j.counts.get(TaskStatus.PENDING, 0) > 0
        and ssn.call(JOB_VALID, j)
        and ssn.call(JOB_STARVING, j)
    ]
    return sorted(jobs, key=ssn.job_key)


def evict_for(
    ssn: Session,
    job: JobInfo,
    pool: list[TaskInfo],
    point: Point[list[TaskInfo]],
    reason: str,
    limit: Point[list[TaskInfo]] | None = None,
) -> bool:
    """Try to make room for `job`'s waiting tasks by evicting from `pool`; commit only if its gang fits.

    Victims are what `limit` (if any) leaves of the pool's allocated tasks of other jobs, as `point`
    chooses among them."""
    stmt = Statement(ssn)
    for task in ssn.ordered_tasks([t for t in job.tasks.values() if t.status is TaskStatus.PENDING]):
        if task.best_effort:
            continue
        node = ssn.best_fit(task, future=True)
        if node >= 0:
            stmt.pipeline(task, node)
            continue
        candidates = [t for t in pool if t.status in ALLOCATED and t.job is not job]
        if limit is not None:
            candidates = ssn.call(limit, task, candidates)
        victims = ssn.call(point, task, candidates)
        plan = plan_eviction(ssn, task, victims) if victims else None
        if plan is None:
            break
        for v in plan.victims:
            stmt.evict(v, reason, f"{reason.lower()}ed by {job.namespace}/{job.name}")
        stmt.pipeline(task, plan.node)
    ssn.touched.add(job.key)
    if any(op.kind == "evict" for op in stmt.ops) and ssn.call(JOB_PIPELINED, job):
        stmt.commit()
        return True
    stmt.discard()
    # Each action keeps its own mark: reclaim may still help a job that preempt could not.
    job.evict_failed_at[reason] = ssn.state.version
    return False
