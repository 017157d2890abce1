"""allocate: place the tasks of admitted jobs, a whole gang or nothing.

Queues in queue order (skipping overused ones), jobs in job order, tasks in
task order. Each task goes to the best-scoring node whose idle resources fit
it, or is pipelined onto resources that evicted pods are releasing. The job's
statement is committed when the job is ready (≥ minAvailable placed), held for
the rest of the cycle when it is pipelined or reserves (sla), else discarded.
Without a readiness plugin (gang) every job is ready after each pod, and, as
Volcano does with a job that is ready while tasks still wait, it is committed
and pushed back into its queue's order after each pod: pods are placed one at
a time, in job order, as a pod-by-pod scheduler would. (With gang, a ready
elastic job keeps placing its extra pods in the same turn, as caldera always
did.) Queues that the queue plugins do not tell apart go in the order of the
jobs at their heads, so with no queue plugin the cluster is one job order,
whatever the queues.
When the enqueue action is not configured, allocate admits Pending podgroups
itself (Volcano's allocate does the same), or they would wait forever.

A job that failed (nothing placed) is not tried again until the state's version
changes (some capacity came back), and within a cycle a fresh gang shaped like
one that just failed in the same queue is not tried: placement only shrinks
free capacity.
"""

from __future__ import annotations

import heapq
from collections import Counter
from itertools import count
from typing import NamedTuple

from caldera.core import objects as o
from caldera.scheduler.framework import (
    ALLOCATABLE,
    JOB_PIPELINED,
    JOB_READY,
    JOB_RESERVE,
    JOB_VALID,
    OVERUSED,
    QUEUE_ORDER,
)
from caldera.scheduler.info import PLACED
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
    job_heaps = {q: [(ssn.job_key(j), next(tie), j) for j in jobs] for q, jobs in by_queue.items()}
    for h in job_heaps.values():
        heapq.heapify(h)
    queues = [(_queue_key(ssn, q, job_heaps[q]), next(tie), q) for q in by_queue]
    heapq.heapify(queues)
    failed_shapes: dict[tuple[object, ...], str] = {}
    while queues:
        _, _, qname = heapq.heappop(queues)
        queue = state.queue(qname)
        if ssn.call(OVERUSED, queue):
            continue
        heap = job_heaps[qname]
        _, _, job = heapq.heappop(heap)
        if _allocate_job(ssn, job, failed_shapes):  # ready with tasks left: back in line for the rest
            heapq.heappush(heap, (ssn.job_key(job), next(tie), job))
        if heap:  # back in line with its share as it is now, after this job (as Volcano does)
            # Alone in line it is next whatever its key: queue-order hooks are keys (pure), so none is asked.
            order = _queue_key(ssn, qname, heap) if queues else ()
            heapq.heappush(queues, (order, next(tie), qname))


def _queue_key(ssn: Session, name: str, heap: list[tuple[tuple[object, ...], int, JobInfo]]) -> tuple[object, ...]:
    """The queue plugins' order, then the order of the job at the queue's head, then the name."""
    return (*ssn.call(QUEUE_ORDER, ssn.state.queue(name)), heap[0][0], name)


def _allocate_job(ssn: Session, job: JobInfo, failed_shapes: dict[tuple[object, ...], str]) -> bool:
    """Place what the job can get; whether it is ready with tasks still waiting for another turn."""
    if not ssn.call(JOB_VALID, job):
        return False
    # The shape is asked for only when one failed already, or when this job fails: its tasks are as they
    # were then (a discarded statement puts them back).
    if failed_shapes:
        shape = _shape(job)
        if shape is not None and shape in failed_shapes:
            _fail(ssn, job, failed_shapes[shape])
            return False
    stmt = Statement(ssn)
    placed = place_tasks(ssn, stmt, job)
    why = placed.why
    ssn.touched.add(job.key)
    if ssn.call(JOB_READY, job):
        some = bool(stmt.ops)
        stmt.commit()
        if not some and why:
            _fail(ssn, job, why)  # ready already, but its next pod fits nowhere: not again until capacity changes
        return placed.more
    # A reservation accumulates what pods free around it; one its queue's share stops would only hold nodes
    # idle against every other queue's jobs, a livelock as long as the share stays below the gang.
    if ssn.call(JOB_PIPELINED, job) or (not placed.capped and ssn.call(JOB_RESERVE, job)):
        ssn.held.append(stmt)
    else:
        stmt.discard()
        _fail(ssn, job, why)
        shape = _shape(job)
        if shape is not None:
            failed_shapes[shape] = why
    return False


def _admit_pending(ssn: Session) -> None:
    """Without the enqueue action nothing else admits a podgroup: every Pending one goes Inqueue (as in Volcano)."""
    for key in sorted(ssn.state.pending_groups):
        ssn.set_phase(ssn.state.jobs[key], o.PG_INQUEUE)


class Placed(NamedTuple):
    why: str  # why the first task that could not be placed failed ('' if none)
    more: bool = False  # its turn ended early with tasks left (no readiness plugin: one pod per turn)
    capped: bool = False  # its queue's share stopped it (whatever the nodes had left)


def place_tasks(ssn: Session, stmt: Statement, job: JobInfo) -> Placed:
    """Place the job's pending (and nominated) tasks, in task order, until one does not fit."""
    queue = ssn.state.queue(job.queue)
    tasks = ssn.ordered_tasks([t for t in job.tasks.values() if _wants_node(t)])
    last = len(tasks) - 1
    one_by_one = not ssn.implemented(JOB_READY)  # no gang: every job is ready after each pod
    for i, task in enumerate(tasks):
        if task.status is TaskStatus.PIPELINED:
            node = task.node
            if ssn.feasible(task, ssn.free(False), extra=task.req)[node]:
                stmt.allocate(task, node)
            continue
        if not ssn.call(ALLOCATABLE, queue, task):
            # Name the queue only when it is what stops the task: with full nodes, the fit error says more.
            if ssn.feasible(task, ssn.free(True)).any():
                return Placed(f"queue {queue.name} is at its deserved share", capped=True)
            return Placed(ssn.fit_error(task), capped=True)
        node = ssn.best_fit(task, future=False)
        if node >= 0:
            stmt.allocate(task, node)
        else:
            node = ssn.best_fit(task, future=True)
            if node < 0:
                return Placed(ssn.fit_error(task))
            stmt.pipeline(task, node)
        if one_by_one and i < last:
            return Placed("", more=True)
    return Placed("")


def _wants_node(task: TaskInfo) -> bool:
    return (task.status is TaskStatus.PENDING and not task.best_effort) or task.status is TaskStatus.PIPELINED


def _fail(ssn: Session, job: JobInfo, why: str) -> None:
    job.failed_at = ssn.state.version
    if why and job.count(PLACED) < job.min_available:
        ssn.unschedulable[job.key] = why


def _shape(job: JobInfo) -> tuple[object, ...] | None:
    """What decides whether a fresh gang fits (None for a job already partly placed)."""
    if any(t.status is not TaskStatus.PENDING for t in job.tasks.values()):
        return None
    # The tasks as a multiset of (request, what the predicates look at).
    tasks = Counter((t.req.tobytes(), t.signature) for t in job.tasks.values())
    return (job.queue, job.min_available, tuple(sorted(job.min_task_member.items())), frozenset(tasks.items()))
