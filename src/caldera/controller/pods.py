"""Rendering the objects a job owns: its pods and its PodGroup, and the job's TTL.

Names and labels are Volcano's (`job_controller_util.go: createJobPod`,
`job_controller_actions.go: createOrUpdatePodGroup`), so tools that select pods by
`volcano.sh/job-name` or find the PodGroup by `<job>-<uid>` work unchanged.
Invariant: rendering is a pure function of the job, its status and the arguments.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from caldera.core import resources
from caldera.core.objects import (
    FINISHED_JOB_PHASES,
    GROUP_NAME_KEY,
    JOB_NAME_KEY,
    JOB_NAMESPACE_KEY,
    JOB_RETRY_COUNT_KEY,
    JOB_VERSION_KEY,
    POD_FAILED,
    POD_SUCCEEDED,
    PREEMPTABLE_KEY,
    QUEUE_NAME_KEY,
    TASK_INDEX_KEY,
    TASK_SPEC_KEY,
    Job,
    ObjectMeta,
    Pod,
    PodGroup,
    PodSpec,
    TaskSpec,
)


def pod_name(job: str, task: str, index: int) -> str:
    return f"{job}-{task}-{index}"


def podgroup_name(job: Job) -> str:
    """`<job>-<uid>`: the uid keeps a re-created job of the same name off its predecessor's PodGroup."""
    return f"{job.name}-{job.metadata.uid}" if job.metadata.uid else job.name


def make_pod(job: Job, task: TaskSpec, index: int, priority: int, now: float) -> Pod:
    """Pod `index` of `task`, from the task's template, for the job's current status version.

    Render it after applying the plan's status: the job-version annotation is what
    later tells the controller whether this pod's events still matter."""
    labels = dict(task.template.labels)
    labels.update(
        {
            JOB_NAME_KEY: job.name,
            JOB_NAMESPACE_KEY: job.namespace,
            TASK_SPEC_KEY: task.name,
            TASK_INDEX_KEY: str(index),
            QUEUE_NAME_KEY: job.spec.queue,
        }
    )
    if PREEMPTABLE_KEY in job.metadata.labels:
        labels[PREEMPTABLE_KEY] = job.metadata.labels[PREEMPTABLE_KEY]
    annotations = dict(task.template.annotations)
    annotations.update(
        {
            JOB_NAME_KEY: job.name,
            TASK_SPEC_KEY: task.name,
            TASK_INDEX_KEY: str(index),
            QUEUE_NAME_KEY: job.spec.queue,
            GROUP_NAME_KEY: podgroup_name(job),
            JOB_VERSION_KEY: str(job.status.version),
            JOB_RETRY_COUNT_KEY: str(job.status.retry_count),
        }
    )
    if PREEMPTABLE_KEY in job.metadata.annotations:
        annotations[PREEMPTABLE_KEY] = job.metadata.annotations[PREEMPTABLE_KEY]
    spec = task.template.spec
    # The job's priority class and scheduler are defaults: a template that names its own keeps it. Most
    # templates have both already (the manifest reader lends them the job's): then the pods share the spec.
    inherits = (not spec.priority_class_name and job.spec.priority_class_name) or (
        not spec.scheduler_name and job.spec.scheduler_name
    )
    if inherits:
        spec = _inherited(spec, job.spec.priority_class_name, job.spec.scheduler_name)
    return Pod(
        metadata=ObjectMeta(
            name=pod_name(job.name, task.name, index),
            namespace=job.namespace,
            creation_timestamp=now,
            labels=labels,
            annotations=annotations,
        ),
        spec=spec,
        job=job.name,
        task=task.name,
        index=index,
        priority=priority,
    )


# A template's spec with what it inherits from its job, by (the template spec's identity, class, scheduler):
# (the template spec, the rendered spec). PodSpecs are frozen, so a task's pods share one rendered spec, as
# they share the template's when it inherits nothing (and the scheduler keeps a request vector per spec).
_INHERITED: dict[tuple[int, str, str], tuple[PodSpec, PodSpec]] = {}
_INHERITED_MAX = 4096


def _inherited(spec: PodSpec, priority_class: str, scheduler: str) -> PodSpec:
    key = (id(spec), priority_class, scheduler)
    found = _INHERITED.get(key)
    if found is not None and found[0] is spec:
        return found[1]
    rendered = replace(
        spec,
        priority_class_name=spec.priority_class_name or priority_class,
        scheduler_name=spec.scheduler_name or scheduler,
    )
    if len(_INHERITED) >= _INHERITED_MAX:
        _INHERITED.clear()
    _INHERITED[key] = (spec, rendered)
    return rendered


def min_resources(job: Job) -> dict[str, float]:
    """The requests of the first minAvailable pods, taking tasks in spec order.

    Volcano orders tasks by their PriorityClass value first, and when
    Σ task minAvailable ≤ job minAvailable takes each task's minAvailable before
    filling up; the controller does not read PriorityClasses, so spec order stands
    in for both: the order users write the gang's core roles in."""
    left = job.spec.min_available
    total: dict[str, float] = {}
    for task in job.spec.tasks:
        if left <= 0:
            break
        n = min(task.replicas, left)
        total = resources.add(total, resources.scale(task.template.spec.requests(), n))
        left -= n
    return total


def make_podgroup(job: Job, now: float) -> PodGroup:
    """The job's PodGroup, Pending until the scheduler admits it; it carries the job's labels and annotations."""
    return PodGroup(
        metadata=ObjectMeta(
            name=podgroup_name(job),
            namespace=job.namespace,
            creation_timestamp=now,
            labels=dict(job.metadata.labels),
            annotations=dict(job.metadata.annotations),
        ),
        job=job.name,
        min_member=job.spec.min_available,
        queue=job.spec.queue,
        priority_class_name=job.spec.priority_class_name,
        min_task_member={t.name: t.min_members for t in job.spec.tasks},
        min_resources=min_resources(job),
    )


def count_podgroup(pg: PodGroup, pods: Iterable[Pod]) -> PodGroup:
    """Set the group's pod counts as Volcano's scheduler writes them: running (placed, not ended nor being
    deleted), succeeded, failed. Returns the group."""
    running = succeeded = failed = 0
    for pod in pods:
        phase = pod.status.phase
        if phase == POD_SUCCEEDED:
            succeeded += 1
        elif phase == POD_FAILED:
            failed += 1
        elif pod.node_name and pod.deletion_timestamp is None:
            running += 1
    pg.running, pg.succeeded, pg.failed = running, succeeded, failed
    return pg


def ttl_expired(job: Job, now: float) -> bool:
    """A finished job (Completed, Failed or Terminated) whose ttlSecondsAfterFinished has passed.

    Counted from the completion time, or from the last transition for a job
    finished before completion times were recorded."""
    ttl = job.spec.ttl_seconds_after_finished
    if ttl is None or job.status.phase not in FINISHED_JOB_PHASES:
        return False
    finished_at = job.status.completion_time
    if finished_at is None:
        finished_at = job.status.last_transition_time
    return now >= finished_at + ttl
