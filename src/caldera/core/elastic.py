"""Elastic jobs in the object model: which tasks are elastic, their range, their defaults.

A task is elastic when the job carries the annotation `caldera.dev/elastic-max-<task>`
(its largest size). Admission (`with_elastic_defaults`) puts that annotation on every
task of a Volcano Job whose `minAvailable < replicas`, with the replicas at submission
as the maximum; `caldera submit pytorch --elastic` sets it itself, also for a fixed
size (`--workers 3`: fault tolerance only, min = max = 3). The task's minimum is its
`minAvailable`; `caldera scale` moves `replicas` within [min, max].

Admission also gives an elastic task the recovery Volcano calls RestartPod for
PodFailed and PodEvicted, unless the task or the job names its own action for those
events: the failed pod is re-created with the same name while the others wait, and
the job is not restarted (its retryCount stays 0). A pod is re-created at most the
task's `maxRetry` times; after that its failure is an ordinary RestartPod, which costs
the job a retry. The launcher in each pod (`caldera launch`) re-forms the training
group through etcd; the variables below tell it where and what.
"""

from __future__ import annotations

from dataclasses import replace

from caldera.core.errors import FieldError, ValidationError
from caldera.core.objects import Job, JobSpec, LifecyclePolicy, TaskSpec

MAX_REPLICAS_PREFIX = "caldera.dev/elastic-max-"
RESTART_POD = "RestartPod"
RECOVERED_EVENTS = ("PodFailed", "PodEvicted")

# What the controller puts in an elastic pod's environment for `caldera launch`
# (and Paddle's launcher, which reads the PADDLE_ names).
SERVER_ENV = ("CALDERA_ELASTIC_SERVER", "PADDLE_ELASTIC_SERVER")
JOB_ID_ENV = ("CALDERA_ELASTIC_JOB_ID", "PADDLE_ELASTIC_JOB_ID")
NP_ENV = ("CALDERA_ELASTIC_NP", "PADDLE_ELASTIC_NP")
POD_NAME_ENV = "CALDERA_POD_NAME"


def max_key(task: str) -> str:
    return f"{MAX_REPLICAS_PREFIX}{task}"


def elastic_range(job: Job, task: str) -> tuple[int, int] | None:
    """(min, max) replicas of an elastic task; None when the task is not elastic (or unknown)."""
    spec = job.spec.task(task)
    raw = job.metadata.annotations.get(max_key(task))
    if spec is None or raw is None:
        return None
    try:
        top = int(raw)
    except ValueError:
        return None
    return spec.min_members, top


def elastic_tasks(job: Job) -> list[str]:
    """The names of the job's elastic tasks, in spec order."""
    return [t.name for t in job.spec.tasks if elastic_range(job, t.name) is not None]


def is_elastic(job: Job) -> bool:
    return bool(elastic_tasks(job))


def max_replicas(job: Job, task: TaskSpec) -> int:
    """How many pods `task` may have at most: its replicas, or an elastic task's maximum."""
    rng = elastic_range(job, task.name)
    return max(task.replicas, rng[1] if rng else 0)


def scale_target(job: Job, task: str | None) -> str:
    """The task `caldera scale` resizes: the one named, else the job's first elastic task
    (else its first task, which `check_scale` then refuses with the reason)."""
    return task or next(iter(elastic_tasks(job)), job.spec.tasks[0].name)


def job_id(job: Job) -> str:
    """The rendezvous id of one incarnation of a job: a job re-created with the same name gets a new one."""
    uid = job.metadata.uid or "0"
    return f"{job.namespace}-{job.name}-{uid}"


def np_value(job: Job, task: str) -> str:
    """`MIN:MAX` for the launcher (`N` when both are equal: fault tolerance at a fixed size)."""
    rng = elastic_range(job, task)
    if rng is None:
        raise ValueError(f"task {task} of job {job.key} is not elastic")
    low, high = rng
    return str(low) if low == high else f"{low}:{high}"


def launcher_env(job: Job, task: str, pod: str, server: str) -> dict[str, str]:
    """The variables an elastic pod's launcher reads; {} for a task that is not elastic."""
    if elastic_range(job, task) is None:
        return {}
    env = {POD_NAME_ENV: pod}
    for name in SERVER_ENV:
        env[name] = server
    for name in JOB_ID_ENV:
        env[name] = job_id(job)
    for name in NP_ENV:
        env[name] = np_value(job, task)
    return env


def with_elastic_defaults(job: Job) -> None:
    """Admission defaults for elastic tasks (see the module docstring); changes `job` in place."""
    tasks: list[TaskSpec] = []
    for task in job.spec.tasks:
        key = max_key(task.name)
        if (
            key not in job.metadata.annotations
            and task.min_available is not None
            and task.min_available < task.replicas
        ):
            job.metadata.annotations[key] = str(task.replicas)
        if key in job.metadata.annotations:
            task = _with_recovery(task, job.spec.policies)
        tasks.append(task)
    if any(a is not b for a, b in zip(tasks, job.spec.tasks, strict=True)):
        job.spec = replace(job.spec, tasks=tuple(tasks))


def _with_recovery(task: TaskSpec, job_policies: tuple[LifecyclePolicy, ...]) -> TaskSpec:
    named = {e for p in (*task.policies, *job_policies) for e in p.events}
    missing = tuple(e for e in RECOVERED_EVENTS if e not in named and "*" not in named)
    if not missing:
        return task
    return replace(task, policies=(*task.policies, LifecyclePolicy(action=RESTART_POD, events=missing)))


def validate_elastic(job: Job) -> list[FieldError]:
    """The annotation must name a task and bound it: minAvailable ≤ replicas ≤ max."""
    errors: list[FieldError] = []
    names = {t.name for t in job.spec.tasks}
    for key, raw in job.metadata.annotations.items():
        if not key.startswith(MAX_REPLICAS_PREFIX):
            continue
        path = f'metadata.annotations["{key}"]'
        task = key.removeprefix(MAX_REPLICAS_PREFIX)
        if task not in names:
            errors.append(FieldError(path, f"names no task of the job (tasks: {', '.join(sorted(names))})"))
            continue
        try:
            top = int(raw)
        except ValueError:
            errors.append(FieldError(path, f"must be a whole number of replicas, got {raw!r}"))
            continue
        spec = job.spec.task(task)
        assert spec is not None
        if top < max(spec.replicas, 1):
            errors.append(FieldError(path, f"the maximum {top} is below the task's replicas {spec.replicas}"))
        elif spec.min_members < 1:
            errors.append(
                FieldError(path, f"an elastic task needs minAvailable ≥ 1, task {task} has {spec.min_members}")
            )
    return errors


def check_scale(job: Job, task: str, replicas: int) -> list[FieldError]:
    """Why `caldera scale` of `task` to `replicas` is refused ([] when it is allowed)."""
    rng = elastic_range(job, task)
    if rng is None:
        elastic = elastic_tasks(job)
        hint = f"its elastic tasks: {', '.join(elastic)}" if elastic else "the job is not elastic"
        return [FieldError("replicas", f"task {task} of job {job.name} cannot be scaled ({hint})")]
    low, high = rng
    if not low <= replicas <= high:
        return [FieldError("replicas", f"{replicas} is outside task {task}'s range {low}:{high}")]
    return []


def scaled(job: Job, task: str, replicas: int) -> JobSpec:
    """`job`'s spec with `task` at `replicas` (minAvailable unchanged); ValidationError outside its range."""
    errors = check_scale(job, task, replicas)
    if errors:
        raise ValidationError(errors, f"scale {job.name}")
    tasks = tuple(replace(t, replicas=replicas) if t.name == task else t for t in job.spec.tasks)
    return replace(job.spec, tasks=tasks)
