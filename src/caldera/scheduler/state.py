"""The scheduler's view of the cluster, kept up to date incrementally (Volcano's cache).

Nodes are a structure of arrays (`nodes.py`); jobs, tasks and queues are small
Python objects carrying running totals.

Invariant: for every node, `used[:, n]` is the sum of the requests of the tasks
that occupy it (statuses in OCCUPYING), `releasing[:, n]` the part of that held
by tasks being evicted, and `nominated[:, n]` the requests of tasks pipelined
onto it; job and queue `allocated` are the sums over their occupying tasks.
Every change goes through `_transition`, which removes a task's old contribution and adds
its new one (`_contribute`), so the totals cannot drift
(`check_invariants` recomputes them from scratch in tests). Each job's attained
service (`service.py`) is kept from the pods' own timestamps as `set_pod`
observes them run and stop; `run_changed` names the jobs whose service rate
changed since a time-driven plugin (las) last looked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from caldera.core import objects as o
from caldera.core.resources import GPU, PODS
from caldera.scheduler.info import ALLOCATED as ALLOCATED
from caldera.scheduler.info import FINISHED as FINISHED
from caldera.scheduler.info import OCCUPYING as OCCUPYING
from caldera.scheduler.info import PLACED as PLACED
from caldera.scheduler.info import READY as READY
from caldera.scheduler.info import RELEASED
from caldera.scheduler.info import UNTRACKED_UNLESS_DECLARED as UNTRACKED_UNLESS_DECLARED
from caldera.scheduler.info import JobInfo as JobInfo
from caldera.scheduler.info import QueueInfo as QueueInfo
from caldera.scheduler.info import TaskInfo as TaskInfo
from caldera.scheduler.info import TaskStatus as TaskStatus
from caldera.scheduler.info import Vector as Vector
from caldera.scheduler.invariants import check_invariants
from caldera.scheduler.nodes import NodeArrays
from caldera.scheduler.placement import Placements

# What a task in each status counts towards (see `_contribute`): node used, releasing, nominated, allocated,
# request. Between statuses that count the same, a move changes no total.
_COUNTS_AS = {
    s: (s in OCCUPYING, s is TaskStatus.RELEASING, s is TaskStatus.PIPELINED, s in ALLOCATED, s in FINISHED)
    for s in TaskStatus
}
# What a PodGroup's status reads of a task's status (the session's `_podgroup_phase` and `_conditions`, the gang
# plugin's job_ready): a move between statuses alike in all of these cannot change it, so it leaves the job clean
# (a pod seen Running after it was bound does not cost a scheduling cycle), unless the status came from a session's
# verdicts (`JobInfo.status_of_session`).
_GROUP_SEES = {s: (s in READY, s in PLACED, s in FINISHED, s is TaskStatus.PENDING) for s in TaskStatus}
REQUESTS_KEPT = 4096  # pod specs whose request vector is kept (`_request_of`)


class ClusterState(NodeArrays):
    """Nodes (`nodes.py`), jobs and queues, updated one object change at a time."""

    def __init__(self, resources: Iterable[str] = ()) -> None:
        super().__init__(resources)
        self.jobs: dict[str, JobInfo] = {}
        self.tasks: dict[str, TaskInfo] = {}
        self.queues: dict[str, QueueInfo] = {}
        self._inqueue_held: dict[str, Vector] = {}
        self.priority_classes: dict[str, int] = {}
        self.default_priority = 0
        self.dirty_jobs: set[str] = set()  # jobs whose podgroup status may need writing
        self.predicate_cache: dict[object, object] = {}  # session.static_rejections, valid for one node_version
        self.fit_cache: dict[object, object] = {}  # enqueue: whether a request fits some empty node, the same
        self.placements: Placements | None = None  # every node's value per request shape (placement.py)
        # Bumped when a queue is added, changed or removed. What plugins derive from the queues' specs and
        # the nodes alone (queue capabilities, ...) is kept in `derived` under the versions it was computed at.
        self.queue_version = 0
        self.derived: dict[str, tuple[tuple[int, ...], object]] = {}
        # A pod spec's request vector and first unknown resource, by the spec's identity (pods of one task
        # share their spec object): (number of dimensions, the spec, the vector, the resource). Emptied when full.
        self._requests: dict[int, tuple[int, o.PodSpec, Vector, str]] = {}
        self.waiting: set[str] = set()  # jobs with tasks Pending or Pipelined: what allocate and preempt look at
        self.pending_groups: set[str] = set()  # jobs whose podgroup is Pending: what enqueue looks at
        self.run_changed: set[str] = set()  # jobs whose running tasks changed since las last looked
        # (time, job key): when a time-driven order (las levels) next changes for a job; a heap, las keeps it.
        self.order_changes: list[tuple[float, str]] = []
        # The job's remaining run time in seconds, known only to a simulator (the srtf oracle); None elsewhere.
        self.remaining: Callable[[JobInfo], float | None] | None = None
        # Σ of the queues' `request` (what every unfinished task asks for), for the queue plugins' shares.
        self.request_total: Vector = np.zeros(len(self.resources))
        self.set_queue(o.Queue(o.ObjectMeta(name="default", namespace="")))  # always exists, as in Volcano

    def _add_dimension(self, name: str) -> None:
        super()._add_dimension(name)
        self.request_total = np.append(self.request_total, 0.0)
        for t in self.tasks.values():
            t.req = np.append(t.req, 0.0)
        for j in self.jobs.values():
            j.allocated = np.append(j.allocated, 0.0)
            j.min_resources = np.append(j.min_resources, 0.0)
        for q in self.queues.values():
            q.capability = np.append(q.capability, np.inf)
            for a in ("guarantee", "deserved_spec", "allocated", "request", "inqueue"):
                setattr(q, a, np.append(getattr(q, a), 0.0))

    # ------------------------------------------------------------ queues and priorities

    def set_queue(self, queue: o.Queue) -> None:
        r = len(self.resources)
        for res in (queue.spec.capability, queue.spec.guarantee, queue.spec.deserved):
            for name in res:
                if name not in self.dim:
                    self._add_dimension(name)
                    r += 1
        cap = np.full(r, np.inf)
        for name, amount in queue.spec.capability.items():
            cap[self.dim[name]] = amount
        guarantee, _ = self.vector(queue.spec.guarantee)
        deserved, _ = self.vector(queue.spec.deserved)
        old = self.queues.get(queue.name)
        self.queues[queue.name] = QueueInfo(
            name=queue.name,
            weight=max(1, queue.spec.weight),
            capability=cap,
            guarantee=guarantee,
            deserved_spec=deserved,
            has_deserved=bool(queue.spec.deserved),
            reclaimable=queue.spec.reclaimable,
            state=queue.state,
            priority=queue.spec.priority,
            parent=queue.spec.parent,
            allocated=old.allocated if old else np.zeros(r),
            request=old.request if old else np.zeros(r),
            inqueue=old.inqueue if old else np.zeros(r),
        )
        self.version += 1
        self.queue_version += 1

    def remove_queue(self, name: str) -> None:
        q = self.queues.pop(name, None)
        if q is not None:
            self.request_total -= q.request
        self.version += 1
        self.queue_version += 1

    def set_priority_classes(self, classes: Iterable[o.PriorityClass]) -> None:
        self.priority_classes = {pc.name: pc.value for pc in classes}
        defaults = [pc.value for pc in classes if pc.global_default]
        self.default_priority = defaults[0] if defaults else 0
        self.version += 1

    def priority_of(self, class_name: str) -> int:
        return self.priority_classes.get(class_name, self.default_priority)

    def queue(self, name: str) -> QueueInfo:
        q = self.queues.get(name)
        if q is None:  # a job whose queue is gone still needs accounting
            self.set_queue(o.Queue(o.ObjectMeta(name=name, namespace=""), state=o.QUEUE_CLOSED))
            q = self.queues[name]
        return q

    # ------------------------------------------------------------ podgroups and pods

    def set_podgroup(self, pg: o.PodGroup) -> JobInfo:
        job = self.jobs.get(pg.key)
        min_res, _ = self.vector(pg.min_resources)
        if job is None:
            job = JobInfo(
                key=pg.key,
                name=pg.job or pg.metadata.name,
                namespace=pg.metadata.namespace,
                queue=pg.queue,
                priority=self.priority_of(pg.priority_class_name),
                min_available=pg.min_member,
                min_task_member=dict(pg.min_task_member),
                creation=pg.metadata.creation_timestamp,
                pg_phase=pg.phase,
                annotations=dict(pg.metadata.annotations),
                min_resources=min_res,
                allocated=np.zeros(len(self.resources)),
                pg_conditions=list(pg.conditions),
            )
            self.jobs[pg.key] = job
            self.queue(job.queue)
            self._index_phase(job)
            if pg.phase == o.PG_INQUEUE:
                self._set_inqueue(job, True)
            return job
        self._set_inqueue(job, False)
        if job.queue != pg.queue:
            self._move_queue(job, pg.queue)
        job.priority = self.priority_of(pg.priority_class_name)
        if job.min_available != pg.min_member or job.min_task_member != pg.min_task_member:
            self.dirty_jobs.add(job.key)  # what its status is measured against changed (another operator's edit)
        job.min_available = pg.min_member
        job.min_task_member = dict(pg.min_task_member)
        job.min_resources = min_res
        job.pg_phase = pg.phase
        self._index_phase(job)
        job.annotations = dict(pg.metadata.annotations)
        job.pg_conditions = list(pg.conditions)
        job.failed_at = -1
        job.evict_failed_at.clear()
        self._set_inqueue(job, pg.phase == o.PG_INQUEUE)
        return job

    def release_podgroup(self, key: str) -> None:
        """The PodGroup was deleted but pods of it still hold nodes: keep them counted, schedule it no more."""
        job = self.jobs.get(key)
        if job is None:
            return
        self._set_inqueue(job, False)
        job.pg_phase, job.inqueue_since = RELEASED, None  # a group of the same name again gives it its phase back
        self._index_phase(job)
        self.waiting.discard(key)
        self.dirty_jobs.discard(key)

    def remove_podgroup(self, key: str) -> None:
        job = self.jobs.get(key)
        if job is None:
            return
        for t in list(job.tasks.values()):
            self.remove_task(t.key)
        self._set_inqueue(job, False)
        del self.jobs[key]
        self.waiting.discard(key)
        self.pending_groups.discard(key)
        self.dirty_jobs.discard(key)
        self.run_changed.discard(key)
        self.version += 1

    def set_pg_phase(self, job: JobInfo, phase: str, now: float) -> None:
        if phase == job.pg_phase:
            return
        self._set_inqueue(job, False)
        job.pg_phase = phase
        self._index_phase(job)
        job.inqueue_since = now if phase == o.PG_INQUEUE else None
        self._set_inqueue(job, phase == o.PG_INQUEUE)

    def _index_phase(self, job: JobInfo) -> None:
        if job.pg_phase == o.PG_PENDING:
            self.pending_groups.add(job.key)
        else:
            self.pending_groups.discard(job.key)

    def _set_inqueue(self, job: JobInfo, on: bool) -> None:
        """Inqueue jobs reserve their minResources in their queue until they start running."""
        q = self.queue(job.queue)
        held = self._inqueue_held.pop(job.key, None)
        if held is not None:
            q.inqueue -= held
        if on:
            self._inqueue_held[job.key] = job.min_resources.copy()
            q.inqueue += job.min_resources

    def _move_queue(self, job: JobInfo, queue: str) -> None:
        for t in job.tasks.values():
            self._contribute(t, -1.0)
        job.queue = queue
        for t in job.tasks.values():
            self._contribute(t, +1.0)

    def set_pod(self, pod: o.Pod, job_key: str) -> TaskInfo | None:
        """Add or update the task for `pod`, moving its accounting to match the pod's phase and node."""
        job = self.jobs.get(job_key)
        if job is None:
            return None
        status, node = self._observed(pod)
        task = self.tasks.get(pod.key)
        if task is None:
            req, unknown = self._request_of(pod.spec)
            task = TaskInfo(
                key=pod.key,
                name=pod.name,
                job=job,
                task=pod.task,
                index=pod.index,
                req=req,
                priority=pod.priority,
                spec=pod.spec,
                labels=pod.metadata.labels,
                annotations=pod.metadata.annotations,
                creation=pod.metadata.creation_timestamp,
                unknown_resource=unknown,
            )
            self.tasks[pod.key] = task
            job.tasks[pod.key] = task
            job.failed_at = -1
            job.evict_failed_at.clear()
            self._contribute(task, +1.0)  # as Pending
            self._transition(task, status, node)
            self._observe_run(task, pod, status)
            self.dirty_jobs.add(job.key)
            return task
        self._observe_run(task, pod, status)
        # A task this scheduler placed stays Binding until the pod shows its node.
        if task.status is TaskStatus.BINDING and status is TaskStatus.PENDING:
            return task
        if task.status is TaskStatus.PIPELINED and status is TaskStatus.PENDING:
            return task
        self._transition(task, status, node)
        return task

    def _request_of(self, spec: o.PodSpec) -> tuple[Vector, str]:
        """`vector` of the spec's requests and a pod slot (a fresh copy: each task owns its vector)."""
        found = self._requests.get(id(spec))
        if found is None or found[1] is not spec or found[0] != len(self.resources):
            req, unknown = self.vector({**spec.requests(), PODS: 1.0})
            if len(self._requests) >= REQUESTS_KEPT:
                self._requests.clear()
            found = self._requests[id(spec)] = (len(self.resources), spec, req, unknown)
        return found[2].copy(), found[3]

    def _observe_run(self, task: TaskInfo, pod: o.Pod, status: TaskStatus) -> None:
        """Open or close the task's run in its job's attained service, at the times the pod carries."""
        running = status is TaskStatus.RUNNING
        start = task.run_since
        if running == (start is not None):
            return
        service = task.job.service
        if start is None:
            start = pod.status.start_time
            task.run_since = start if start is not None else pod.metadata.creation_timestamp
            d = self.dim.get(GPU)
            task.run_gpus = float(task.req[d]) / 1000.0 if d is not None else 0.0  # milli-GPUs, as quantities are
            service.open(task.run_gpus, task.run_since)
        else:
            end = pod.status.finish_time if pod.finished else pod.deletion_timestamp
            service.close(task.run_gpus, start, end if end is not None else start)
            task.run_since = None
        self.run_changed.add(task.job.key)

    def remove_task(self, key: str) -> None:
        task = self.tasks.pop(key, None)
        if task is None:
            return
        if task.run_since is not None:  # gone without being seen to stop (its group was dropped): no more credit
            task.job.service.close(task.run_gpus, task.run_since, task.run_since)
            task.run_since = None
        if task.status in OCCUPYING or task.status is TaskStatus.PIPELINED:
            self.version += 1  # capacity came back
        self._contribute(task, -1.0)
        task.job.tasks.pop(key, None)
        self.dirty_jobs.add(task.job.key)

    def _observed(self, pod: o.Pod) -> tuple[TaskStatus, int]:
        node = self.node_index.get(pod.node_name, -1) if pod.node_name else -1
        phase = pod.status.phase
        if phase == o.POD_SUCCEEDED:
            return TaskStatus.SUCCEEDED, -1
        if phase == o.POD_FAILED:
            return TaskStatus.FAILED, -1
        if pod.deletion_timestamp is not None and node >= 0:
            return TaskStatus.RELEASING, node
        if node < 0:
            return TaskStatus.PENDING, -1
        return (TaskStatus.RUNNING if phase == o.POD_RUNNING else TaskStatus.BOUND), node

    # ------------------------------------------------------------ the one place accounting changes

    def _transition(self, task: TaskInfo, status: TaskStatus, node: int, bump: bool = True) -> None:
        old_status, old_node = task.status, task.node
        if old_status is status and old_node == node:
            return
        if old_node == node and _COUNTS_AS[old_status] == _COUNTS_AS[status]:
            # Allocated → Binding → Running, Succeeded ↔ Failed: every total stays; only the tallies move.
            counts = task.job.counts
            counts[old_status] -= 1
            counts[status] = counts.get(status, 0) + 1
            task.status = status
        else:
            self._contribute(task, -1.0)
            task.status, task.node = status, node
            self._contribute(task, +1.0)
        if task.job.status_of_session or _GROUP_SEES[old_status] != _GROUP_SEES[status]:
            self.dirty_jobs.add(task.job.key)
        # Capacity grew (a node freed or will free resources): failed jobs may fit now.
        freed = (old_status in OCCUPYING and status not in OCCUPYING) or old_status is TaskStatus.PIPELINED
        if bump and (freed or (status is TaskStatus.RELEASING and old_status is not TaskStatus.RELEASING)):
            self.version += 1

    def _contribute(self, task: TaskInfo, sign: float) -> None:
        """Add (sign +1) or remove (-1) what `task` in its current status counts towards every total."""
        s, n = task.status, task.node
        job = task.job
        counts = job.counts
        counts[s] = counts.get(s, 0) + int(sign)
        if s is TaskStatus.PENDING or s is TaskStatus.PIPELINED:
            if counts.get(TaskStatus.PENDING, 0) + counts.get(TaskStatus.PIPELINED, 0) > 0 and job.pg_phase != RELEASED:
                self.waiting.add(job.key)
            else:
                self.waiting.discard(job.key)
        if s in FINISHED:
            return
        req = task.req
        op = np.add if sign > 0 else np.subtract  # in place; x − r is x + (−r) exactly: the totals of sign × r
        if s in OCCUPYING:
            column = self.used[:, n]
            op(column, req, out=column)
            versions = self.used_version
            for d in task.dims:
                versions[d] += 1
            self.note_change(n)
        if s is TaskStatus.RELEASING:
            column = self.releasing[:, n]
            op(column, req, out=column)
        elif s is TaskStatus.PIPELINED:
            column = self.nominated[:, n]
            op(column, req, out=column)
            self.note_change(n)
        q = self.queues.get(job.queue) or self.queue(job.queue)
        if s in ALLOCATED:
            op(job.allocated, req, out=job.allocated)
            op(q.allocated, req, out=q.allocated)
        op(q.request, req, out=q.request)
        op(self.request_total, req, out=self.request_total)

    # ------------------------------------------------------------ used by statements

    def move(self, task: TaskInfo, status: TaskStatus, node: int) -> None:
        """A session's tentative change (allocate, pipeline, evict or their undo): no version bump."""
        self._transition(task, status, node, bump=False)

    def check_invariants(self) -> None:
        """Recompute every total from the tasks; AssertionError on any drift (for tests)."""
        check_invariants(self)
