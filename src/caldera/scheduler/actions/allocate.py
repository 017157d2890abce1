"""allocate: place the tasks of admitted jobs, a whole gang or nothing.

Queues in queue order (skipping overused ones), jobs in job order, tasks in
task order. Each task goes to the best-scoring node whose idle resources fit
it, or is pipelined onto resources that evicted pods are releasing. The job's
statement is committed when the job is ready (≥ minAvailable placed), held for
the rest of the cycle when it is pipelined or reserves (sla), else discarded.
When the enqueue action is not configured, allocate admits Pending podgroups
itself (Volcano's allocate does the same), or they would wait forever.

A job that failed is not tried again until the state's version changes (some
capacity came back), and within a cycle a fresh gang shaped like one that just
failed in the same queue is not tried: placement only shrinks free capacity.
"""

from __future__ import annotations

import heapq
from itertools import count

from caldera.core import objects as o
from caldera.scheduler.framework import ALLOCATABLE, JOB_PIPELINED, JOB_READY, JOB_RESERVE, JOB_VALID, OVERUSED
from caldera.scheduler.session import Session
from caldera.scheduler.state import JobInfo, TaskInfo, TaskStatus
from caldera.scheduler.statement import Statement

ACTIVE = (o.PG_INQUEUE, o.PG_RUNNING, o.PG_UNKNOWN)


def allocate(ssn: Session) -> None:
    state = ssn.state
    if "enqueue" not in ssn.config.actions:
        _admit_pending(ssn)
    if not state.waiting:
        return
    by_queue: dict[str, list[JobInfo]] = {}
    for key in state.waiting:
        job = state.jobs[key]
        if job.pg_phase in ACTIVE and job.failed_at != state.version:
            by_queue.setdefault(job.queue, []).append(job)
    tie = count()
    queues = [(ssn.queue_key(state.queue(q)), next(tie), q) for q in by_queue]
    heapq.heapify(queues)
    job_heaps = {q: [(ssn.job_key(j), next(tie), j) for j in jobs] for q, jobs in by_queue.items()}
    for h in job_heaps.values():
        heapq.heapify(h)
    failed_shapes: dict[tuple[object, ...], str] = {}
    while queues:
        _, _, qname = heapq.heappop(queues)
        queue = state.queue(qname)
        if ssn.call(OVERUSED, queue):
            continue
        heap = job_heaps[qname]
        _, _, job = heapq.heappop(heap)
        _allocate_job(ssn, job, failed_shapes)
        if heap:  # back in line with its share as it is now, after this job (as Volcano does)
            heapq.heappush(queues, (ssn.queue_key(queue), next(tie), qname))


def _allocate_job(ssn: Session, job: JobInfo, failed_shapes: dict[tuple[object, ...], str]) -> None:
    if not ssn.call(JOB_VALID, job):
        return
    shape = _shape(job)
    if shape is not None and shape in failed_shapes:
        _fail(ssn, job, failed_shapes[shape])
        return
    stmt = Statement(ssn)
    why = place_tasks(ssn, stmt, job)
    ssn.touched.add(job.key)
    if ssn.call(JOB_READY, job):
        stmt.commit()
    elif ssn.call(JOB_PIPELINED, job) or ssn.call(JOB_RESERVE, job):
        ssn.held.append(stmt)
    else:
        stmt.discard()
        _fail(ssn, job, why)
        if shape is not None:
            failed_shapes[shape] = why


def _admit_pending(ssn: Session) -> None:
    """Without the enqueue action nothing else admits a podgroup: every Pending one goes Inqueue (as in Volcano)."""
    for key in sorted(ssn.state.pending_groups):
        ssn.set_phase(ssn.state.jobs[key], o.PG_INQUEUE)


def place_tasks(ssn: Session, stmt: Statement, job: JobInfo) -> str:
    """Place the job's pending (and nominated) tasks; return why the first unplaceable one failed ('' if none)."""
    queue = ssn.state.queue(job.queue)
    for task in ssn.ordered_tasks([t for t in job.tasks.values() if _wants_node(t)]):
        if task.status is TaskStatus.PIPELINED:
            node = task.node
            if ssn.feasible(task, ssn.free(False), extra=task.req)[node]:
                stmt.allocate(task, node)
            continue
        if not ssn.call(ALLOCATABLE, queue, task):
            # Name the queue only when it is what stops the task: with full nodes, the fit error says more.
            if ssn.feasible(task, ssn.free(True)).any():
                return f"queue {queue.name} is at its deserved share"
            return ssn.fit_error(task)
        node = ssn.best_node(task, ssn.feasible(task, ssn.free(False)))
        if node >= 0:
            stmt.allocate(task, node)
            continue
        node = ssn.best_node(task, ssn.feasible(task, ssn.free(True)))
        if node >= 0:
            stmt.pipeline(task, node)
            continue
        return ssn.fit_error(task)
    return ""


def _wants_node(task: TaskInfo) -> bool:
    return (task.status is TaskStatus.PENDING and not task.best_effort) or task.status is TaskStatus.PIPELINED


def _fail(ssn: Session, job: JobInfo, why: str) -> None:
    job.failed_at = ssn.state.version
    if why and job.count(frozenset({TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.BINDING})) < job.min_available:
        ssn.unschedulable[job.key] = why


def _shape(job: JobInfo) -> tuple[object, ...] | None:
    """What decides whether a fresh gang fits (None for a job already partly placed)."""
    if any(t.status is not TaskStatus.PENDING for t in job.tasks.values()):
        return None
    tasks = sorted(
        repr((t.req.tolist(), sorted(t.spec.node_selector.items()), t.spec.node_affinity, t.spec.tolerations))
        for t in job.tasks.values()
    )
    return (job.queue, job.min_available, tuple(sorted(job.min_task_member.items())), tuple(tasks))
