"""Keyword-only builders for controller tests, and a tiny executor that carries out a Plan."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from caldera.controller import JOB_TARGET, Plan, Target, execute, make_pod
from caldera.core.objects import (
    PENDING,
    PG_INQUEUE,
    PG_PENDING,
    POD_RUNNING,
    Container,
    Job,
    JobSpec,
    JobStatus,
    LifecyclePolicy,
    ObjectMeta,
    Pod,
    PodSpec,
    PodStatus,
    PodTemplate,
    TaskSpec,
)


def make_task(
    *,
    name: str = "worker",
    replicas: int = 2,
    min_available: int | None = None,
    policies: Sequence[LifecyclePolicy] = (),
    max_retry: int = 3,
    depends_on: Sequence[str] = (),
    requests: Mapping[str, float] | None = None,
    labels: Mapping[str, str] | None = None,
    priority_class_name: str = "",
) -> TaskSpec:
    container = Container(name="main", image="busybox", requests=dict(requests or {}))
    template = PodTemplate(
        labels=dict(labels or {}),
        spec=PodSpec(containers=(container,), priority_class_name=priority_class_name),
    )
    return TaskSpec(
        name=name,
        replicas=replicas,
        template=template,
        min_available=min_available,
        policies=tuple(policies),
        max_retry=max_retry,
        depends_on=tuple(depends_on),
    )


def make_job(
    *,
    name: str = "job",
    namespace: str = "default",
    uid: str = "",
    tasks: Sequence[TaskSpec] | None = None,
    min_available: int | None = None,
    min_success: int | None = None,
    policies: Sequence[LifecyclePolicy] = (),
    max_retry: int = 3,
    queue: str = "default",
    priority_class_name: str = "",
    ttl_seconds_after_finished: int | None = None,
    phase: str = PENDING,
    retry_count: int = 0,
    version: int = 0,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Job:
    """A job; minAvailable defaults to Σ task minAvailable, as Volcano's webhook defaults it."""
    tasks = tuple(tasks) if tasks is not None else (make_task(),)
    spec = JobSpec(
        tasks=tasks,
        min_available=sum(t.min_members for t in tasks) if min_available is None else min_available,
        min_success=min_success,
        policies=tuple(policies),
        max_retry=max_retry,
        queue=queue,
        priority_class_name=priority_class_name,
        ttl_seconds_after_finished=ttl_seconds_after_finished,
    )
    meta = ObjectMeta(name=name, namespace=namespace, uid=uid, labels=dict(labels or {}))
    meta.annotations.update(annotations or {})
    return Job(metadata=meta, spec=spec, status=JobStatus(phase=phase, retry_count=retry_count, version=version))


def make_pod_of(
    job: Job,
    *,
    task: str | None = None,
    index: int = 0,
    phase: str = POD_RUNNING,
    deleting: bool = False,
    exit_code: int | None = None,
    restart_count: int = 0,
    uid: str = "",
) -> Pod:
    """Pod `index` of `task` (the job's first task by default) in `phase`, rendered as the controller would."""
    spec = job.spec.task(task) if task is not None else job.spec.tasks[0]
    assert spec is not None
    pod = make_pod(job, spec, index, priority=0, now=0.0)
    pod.metadata.uid = uid
    pod.status = PodStatus(phase=phase, exit_code=exit_code, restart_count=restart_count)
    pod.deletion_timestamp = 1.0 if deleting else None
    return pod


def make_pods(job: Job, *, phases: Mapping[str, Sequence[str]] | None = None, phase: str = POD_RUNNING) -> list[Pod]:
    """Every replica of every task in `phase`, or the phases listed per task (index order)."""
    out: list[Pod] = []
    for t in job.spec.tasks:
        listed = phases.get(t.name) if phases is not None else None
        for i, ph in enumerate(listed if listed is not None else [phase] * t.replicas):
            out.append(make_pod_of(job, task=t.name, index=i, phase=ph))
    return out


def by_name(pods: Sequence[Pod], name: str) -> Pod:
    return next(p for p in pods if p.name == name)


class Harness:
    """A job, its pods and its PodGroup phase; `step` executes an action and carries out the plan.

    Killed pods get a deletion timestamp and linger until `drain` removes them, as a
    real executor would after the grace period; created pods start Pending."""

    def __init__(self, job: Job, pods: Sequence[Pod] = (), podgroup_phase: str = PG_INQUEUE) -> None:
        self.job = job
        self.pods = list(pods)
        self.podgroup_phase = podgroup_phase
        self.now = 0.0
        self.plans: list[Plan] = []

    def step(self, action: str, target: Target = JOB_TARGET) -> Plan:
        self.now += 1.0
        plan = execute(self.job, self.pods, action, target, now=self.now, podgroup_phase=self.podgroup_phase)
        self.job.status = plan.status
        for pod in self.pods:
            if pod.name in plan.kill:
                pod.deletion_timestamp = self.now
        if plan.delete_podgroup:
            self.podgroup_phase = ""
        if plan.sync_podgroup and not self.podgroup_phase:
            self.podgroup_phase = PG_PENDING  # re-created; the scheduler has yet to admit it
        for task_name, index in plan.create:
            task = self.job.spec.task(task_name)
            assert task is not None
            self.pods.append(make_pod(self.job, task, index, priority=0, now=self.now))
        self.plans.append(plan)
        return plan

    def admit(self) -> None:
        """The scheduler's enqueue: the PodGroup becomes Inqueue."""
        self.podgroup_phase = PG_INQUEUE

    def drain(self) -> None:
        self.pods = [p for p in self.pods if p.deletion_timestamp is None]

    def set_phase(self, phase: str, *, names: Sequence[str] | None = None, exit_code: int | None = None) -> None:
        for pod in self.pods:
            if names is None or pod.name in names:
                pod.status = PodStatus(phase=phase, exit_code=exit_code, restart_count=pod.status.restart_count)

    def pod(self, name: str) -> Pod:
        return by_name(self.pods, name)

    @property
    def names(self) -> list[str]:
        return sorted(p.name for p in self.pods)
