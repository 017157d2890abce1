"""`execute`, which plans one step of Volcano's job state machine (its table: transitions.py).

`execute` is pure: it returns a `Plan` (pods to delete, pods to create, the next
JobStatus) and the caller carries it out. Invariants: only SyncJob creates pods, and
only once the PodGroup has been admitted (phase neither absent nor Pending); a pod
already being deleted is never deleted again; the version goes up on every
whole-job kill, so events of the pods it killed can no longer trigger policies.
"""

from __future__ import annotations

from collections.abc import Sequence

from caldera.controller.elastic import elastic_sync, replaceable
from caldera.controller.events import (
    PARTITION_SCOPE,
    POD_SCOPE,
    RESTART_POD,
    SYNC_JOB,
    TASK_SCOPE,
    Target,
)
from caldera.controller.pods import pod_name
from caldera.controller.status import PodCounts, build_status, job_status_counts
from caldera.controller.transitions import (
    KILL_JOB,
    KILL_TARGET,
    REFUSED_RESTART,
    SYNC,
    Edge,
    Step,
    edge_for,
    pending_check,
    running_check,
)
from caldera.core.elastic import elastic_range, is_elastic
from caldera.core.objects import (
    COMPLETED,
    FAILED,
    FINISHED_JOB_PHASES,
    JOB_PHASES,
    PENDING,
    PG_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    RUNNING,
    Job,
    JobStatus,
    Pod,
)
from caldera.utils.records import immutable

# ---------------------------------------------------------------- the plan


@immutable
class Plan:
    """One step of the state machine, for the caller to carry out in this order:

    set `status` on the job; delete the pods named in `kill`; delete the PodGroup if
    `delete_podgroup`; create (or update) it if `sync_podgroup`; render and create
    the pods in `create` with `make_pod` (which reads the new status's version).
    Deleting a PodGroup that is already gone is not an error: every KillJob asks for it."""

    status: JobStatus
    previous_phase: str
    counts: PodCounts
    kill: tuple[str, ...] = ()
    create: tuple[tuple[str, int], ...] = ()  # (task, index)
    delete_podgroup: bool = False  # a whole-job kill releases the gang: a restart is admitted afresh
    sync_podgroup: bool = False  # SyncJob (re)creates the job's PodGroup

    @property
    def phase(self) -> str:
        return self.status.phase

    @property
    def reason(self) -> str:
        return self.status.reason

    @property
    def message(self) -> str:
        return self.status.message

    @property
    def retry_count(self) -> int:
        return self.status.retry_count

    @property
    def version(self) -> int:
        return self.status.version

    @property
    def phase_changed(self) -> bool:
        return self.status.phase != self.previous_phase

    @property
    def finished(self) -> bool:
        """The job reached Completed, Terminated or Failed: nothing will run again."""
        return self.status.phase in FINISHED_JOB_PHASES


def _live(pods: Sequence[Pod]) -> list[Pod]:
    return [p for p in pods if p.deletion_timestamp is None]


def _kill_job(pods: Sequence[Pod], keep_finished: bool) -> tuple[str, ...]:
    return tuple(p.name for p in _live(pods) if not (keep_finished and p.finished))


def _kill_target(pods: Sequence[Pod], target: Target) -> tuple[str, ...]:
    if target.scope == TASK_SCOPE:
        return tuple(p.name for p in _live(pods) if p.task == target.task)
    if target.scope == POD_SCOPE:
        return tuple(p.name for p in _live(pods) if p.name == target.pod and (not target.task or p.task == target.task))
    return ()


def _ready(job: Job, pods: Sequence[Pod], task: str) -> bool:
    """A dependency is ready when its task has minAvailable pods Running or Succeeded."""
    spec = job.spec.task(task)
    if spec is None:
        return True  # validation rejects unknown names; a stale one must not block forever
    up = sum(1 for p in _live(pods) if p.task == task and p.status.phase in (POD_RUNNING, POD_SUCCEEDED))
    return up >= spec.min_members


def _sync(job: Job, pods: Sequence[Pod]) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    """SyncJob on an admitted job: create each missing pod, delete live pods beyond the replicas.

    A pod counts as present while it exists at all (finished or being deleted): its
    name is taken until it is gone. Pods of a task with dependsOn are created only
    once every task it depends on is ready."""
    present = {p.name for p in pods}
    live = _live(pods)
    kill: list[str] = []
    create: list[tuple[str, int]] = []
    elastic = bool(job.metadata.annotations)  # an elastic task is named by an annotation: none, none elastic
    for task in job.spec.tasks:
        name, replicas = task.name, task.replicas
        if elastic and elastic_range(job, name) is not None:
            task_kill, task_create = elastic_sync(job, task, pods)
            kill.extend(task_kill)
            if all(_ready(job, pods, dep) for dep in task.depends_on):
                create.extend(task_create)
            continue
        kill.extend(p.name for p in live if p.index >= replicas and p.task == name)
        if task.depends_on and not all(_ready(job, pods, dep) for dep in task.depends_on):
            continue
        prefix = pod_name(job.name, name, 0)[:-1]  # `pod_name` of every index is this and the index
        create.extend((name, i) for i in range(replicas) if f"{prefix}{i}" not in present)
    return tuple(kill), tuple(create)


def _replaces_pod(job: Job, pods: Sequence[Pod], action: str, target: Target, phase: str) -> bool:
    if action != RESTART_POD or target.scope != POD_SCOPE or phase not in (PENDING, RUNNING):
        return False
    # An evicted pod is already gone from `pods`: its task comes with the request.
    task = next((p.task for p in pods if p.name == target.pod), target.task)
    return bool(task) and replaceable(job, task, target.pod)


def _elastic_finished(job: Job, c: PodCounts) -> bool:
    """An elastic job whose training ended: pods succeeded, none runs; pods never placed need not run."""
    if not is_elastic(job):
        return False
    return c.running == c.terminating == c.failed == 0 and c.succeeded >= max(job.spec.min_available, 1)


def execute(job: Job, pods: Sequence[Pod], action: str, target: Target, now: float, podgroup_phase: str) -> Plan:
    """Plan `action` on `job` (targeted at `target`) given its `pods` and its PodGroup's phase ("" if none)."""
    old = job.status
    phase = old.phase if old.phase in JOB_PHASES else PENDING
    edge = edge_for(phase, action)
    if edge.do == KILL_TARGET and target.scope == PARTITION_SCOPE:
        # caldera models no partition policy, so a partition is empty: Volcano then changes nothing.
        counts = job_status_counts(pods)
        status = build_status(job, counts, phase=phase, now=now, retry_count=old.retry_count, version=old.version)
        return Plan(status=status, previous_phase=old.phase, counts=counts)
    pod_retries: dict[str, int] | None = None
    if _replaces_pod(job, pods, action, target, phase):
        # caldera: an elastic pod is re-created in place while the others wait; the job is not restarted.
        # A pod still there is deleted (the sync after its end re-creates it); one already gone is re-created now.
        present = any(p.name == target.pod for p in pods)
        edge = Edge(KILL_TARGET if present else SYNC, check=pending_check if phase == PENDING else running_check)
        pod_retries = {**old.pod_retries, target.pod: old.pod_retries.get(target.pod, 0) + 1}
    refused = edge.retry and old.retry_count >= job.spec.max_retry
    if refused:
        edge = REFUSED_RESTART
    retry = old.retry_count + (1 if edge.retry else 0)
    do = edge.do
    if do == KILL_JOB and edge.sync_if_idle and not _live(pods):
        do = SYNC

    kill: tuple[str, ...] = ()
    create: tuple[tuple[str, int], ...] = ()
    whole_job_kill = do == KILL_JOB
    if do == KILL_JOB:
        kill = _kill_job(pods, keep_finished=edge.retain_finished)
    elif do == KILL_TARGET:
        kill = _kill_target(pods, target)
    elif podgroup_phase not in ("", PG_PENDING):
        kill, create = _sync(job, pods)
    counts = job_status_counts(pods, kill, create)

    step: Step | None = None
    if refused:
        step = Step(FAILED, "MaxRetry", f"{action} refused: {old.retry_count} of maxRetry {job.spec.max_retry} used")
    elif edge.to is not None:
        step = Step(edge.to, action, f"{action} in {phase}")
    elif edge.check is not None:
        step = edge.check(job.spec, counts, retry)
    if step is None and do == SYNC and phase == RUNNING and _elastic_finished(job, counts):
        step = Step(COMPLETED, "ElasticFinished", f"{counts.succeeded} pods succeeded and none runs")
    next_phase = step.phase if step is not None else phase

    if do == SYNC and next_phase in FINISHED_JOB_PHASES:
        # caldera: a sync that finishes the job drains it in the same step (Volcano does it on the next
        # event, as a KillJob of the finished state): no pod is created, whatever still runs is killed.
        create = ()
        kill = tuple(dict.fromkeys([*kill, *_kill_job(pods, keep_finished=True)]))
        counts = job_status_counts(pods, kill)
        whole_job_kill = True

    status = build_status(
        job,
        counts,
        phase=next_phase,
        now=now,
        retry_count=retry,
        version=old.version + (1 if whole_job_kill else 0),
        reason=step.reason if step is not None else "",
        message=step.message if step is not None else "",
        pod_retries=pod_retries,
    )
    return Plan(
        status=status,
        previous_phase=old.phase,
        counts=counts,
        kill=kill,
        create=create,
        delete_podgroup=whole_job_kill,
        sync_podgroup=do == SYNC and not whole_job_kill,
    )


def resync_is_idle(job: Job, plan: Plan) -> bool:
    """Whether a SyncJob run right after `plan` (its status on `job`, the pods and the PodGroup unchanged)
    would plan nothing: the same phase, status, no pod deleted or created.

    `plan` must be a sync that neither deleted nor created a pod: the re-sync's `_sync` then finds the
    same pods to delete and create (none: it depends only on the spec, the pods and the PodGroup's
    phase), so the same counts, and only the new phase's check could move the job on. What a phase
    change asks for (Volcano's job handler re-syncs the job) is then known to be idle without running it."""
    if plan.kill or plan.create or not plan.sync_podgroup:
        return False
    phase = plan.status.phase
    edge = edge_for(phase, SYNC_JOB)
    if edge.do != SYNC or edge.to is not None or edge.retry or edge.check is None:
        return False
    step = edge.check(job.spec, plan.counts, plan.status.retry_count)
    if step is not None and step.phase != phase:
        return False
    return not (phase == RUNNING and _elastic_finished(job, plan.counts))
