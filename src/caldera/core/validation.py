"""Volcano's admission rules for jobs, queues and priority classes, as FieldErrors.

These are the checks Volcano's validating webhook makes (`admit_job.go`, `util.go`,
`validate_queue.go`), with each broken rule reported against its field path in the
manifest's own spelling (`spec.tasks[1].minAvailable`). They take objects, not
manifests, so they serve a parsed manifest and an object built in code alike.
Nothing here reads a store: rules that need the cluster's queues take them as an
argument.

Where Volcano leaves room, caldera chooses:
- `RestartTask`, `RestartPod` and `RestartPartition` act on the task, pod or
  partition an event came from, so they are refused with `Unknown` and
  `JobUpdated`, the events raised for a job as a whole. This holds in job-level
  and task-level lists alike; `*` stays allowed with them.
- `RestartPod` and `RestartPartition` are allowed as Volcano now allows them
  (its older allow-list predates them); `PodPending` is allowed as in the CRD.
- A job name must be a DNS-1123 label (Volcano checks only a qualified name),
  because pod names `<job>-<task>-<index>` are also host names.
- A queue's `deserved` may not exceed its `capability`, as `guarantee` may not.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence

from caldera.core.elastic import validate_elastic
from caldera.core.errors import FieldError
from caldera.core.objects import (
    QUEUE_CLOSED,
    QUEUE_CLOSING,
    QUEUE_OPEN,
    Job,
    JobSpec,
    LifecyclePolicy,
    PriorityClass,
    Queue,
)
from caldera.core.resources import from_units

USER_EVENTS = ("*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated")
USER_ACTIONS = (
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "RestartPartition",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
)
JOB_PLUGINS = ("env", "svc", "ssh", "pytorch", "tensorflow", "mpi", "paddle", "kubeflow")
QUEUE_STATES = (QUEUE_OPEN, QUEUE_CLOSING, QUEUE_CLOSED)
MAX_QUEUE_WEIGHT = 65535
# Kubernetes reserves priorities above this for classes named `system-...`.
MAX_USER_PRIORITY = 1_000_000_000

# Events raised for the job as a whole: the request names no task and no pod.
_JOB_SCOPED_EVENTS = frozenset({"Unknown", "JobUpdated"})
_TARGETED_ACTIONS = frozenset({"RestartTask", "RestartPod", "RestartPartition"})
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def dns1123_label_error(name: str) -> str | None:
    """Why `name` is not a DNS-1123 label (a host name part), or None."""
    if not name:
        return "must not be empty"
    if len(name) > 63:
        return f'"{name}" is longer than 63 characters'
    if not _LABEL.match(name):
        return f'"{name}" must be a DNS-1123 label: lowercase letters, digits and "-", starting and ending alphanumeric'
    return None


def dns1123_subdomain_error(name: str) -> str | None:
    """Why `name` is not a DNS-1123 subdomain (a Kubernetes object name), or None."""
    if not name:
        return "must not be empty"
    if len(name) > 253:
        return f'"{name}" is longer than 253 characters'
    if not _SUBDOMAIN.match(name):
        return f'"{name}" must be a DNS-1123 subdomain: lowercase letters, digits, "-" and "."'
    return None


# ---------------------------------------------------------------- jobs


def validate_job(job: Job) -> list[FieldError]:
    """The rules a job must keep whatever the cluster holds."""
    spec = job.spec
    errors: list[FieldError] = []
    if (why := dns1123_label_error(job.name)) is not None:
        errors.append(FieldError("metadata.name", why))
    if not spec.tasks:
        errors.append(FieldError("spec.tasks", "must have at least one task"))
    total = spec.total_replicas
    if spec.min_available < 0:
        errors.append(FieldError("spec.minAvailable", "must be an integer >= 0"))
    elif spec.min_available > total:
        errors.append(
            FieldError("spec.minAvailable", f"{spec.min_available} is more than the {total} replicas of all tasks")
        )
    if spec.max_retry < 0:
        errors.append(FieldError("spec.maxRetry", "must be an integer >= 0"))
    errors.extend(validate_elastic(job))
    if spec.ttl_seconds_after_finished is not None and spec.ttl_seconds_after_finished < 0:
        errors.append(FieldError("spec.ttlSecondsAfterFinished", "must be an integer >= 0"))
    if spec.min_success is not None:
        if spec.min_success < 1:
            errors.append(FieldError("spec.minSuccess", "must be an integer >= 1"))
        elif spec.min_success > total:
            errors.append(
                FieldError("spec.minSuccess", f"{spec.min_success} is more than the {total} replicas of all tasks")
            )
    if not spec.queue:
        errors.append(FieldError("spec.queue", "must not be empty"))
    errors += _tasks(job)
    errors += _policies(spec.policies, "spec.policies")
    errors += _plugins(spec)
    errors += _dependencies(spec)
    return errors


# Kubernetes creates these two itself; any other class a job names must exist.
BUILTIN_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def validate_job_admission(
    job: Job, queues: Mapping[str, Queue], priority_classes: Collection[str] | None = None, *, valid: bool = False
) -> list[FieldError]:
    """`validate_job` plus the rules against the cluster's queues and, when given, its PriorityClasses, by name.

    A class that does not exist is refused, as Kubernetes' Priority admission refuses such
    a pod (and Arena checks before it submits): the job could never start. `valid`: the job passed
    `validate_job` already, as it is (a manifest reader's): only the rules against the cluster are checked."""
    errors = [] if valid else validate_job(job)
    if priority_classes is not None:
        errors += priority_class_errors(job, priority_classes)
    name = job.spec.queue
    queue = queues.get(name)
    if queue is None:
        errors.append(FieldError("spec.queue", f'queue "{name}" does not exist'))
    elif queue.state != QUEUE_OPEN:
        errors.append(FieldError("spec.queue", f'queue "{name}" is {queue.state}; only Open queues accept jobs'))
    else:
        children = sorted(q.name for q in queues.values() if q.spec.parent == name)
        if children:
            # A parent's share is only the sum of its children's; a job there would be outside every share.
            names = ", ".join(f'"{c}"' for c in children)
            errors.append(
                FieldError("spec.queue", f'queue "{name}" is the parent of {names}; jobs go to leaf queues only')
            )
    return errors


def priority_class_errors(job: Job, classes: Collection[str]) -> list[FieldError]:
    """Each PriorityClass the job (or a pod template) names that is neither in `classes` nor built in."""
    known = frozenset(classes) | BUILTIN_PRIORITY_CLASSES
    named = [("spec.priorityClassName", job.spec.priority_class_name)]
    named += [
        (f"spec.tasks[{i}].template.spec.priorityClassName", t.template.spec.priority_class_name)
        for i, t in enumerate(job.spec.tasks)
    ]
    listed = ", ".join(sorted(known - BUILTIN_PRIORITY_CLASSES)) or "none yet"
    first: dict[str, str] = {}  # a class → the first path naming it (templates inherit the job's)
    for path, name in named:
        if name and name not in known:
            first.setdefault(name, path)
    return [
        FieldError(path, f'no PriorityClass named "{name}" (the cluster has: {listed}; see `caldera priorityclass`)')
        for name, path in first.items()
    ]


def _tasks(job: Job) -> list[FieldError]:
    errors: list[FieldError] = []
    first: dict[str, int] = {}
    for i, task in enumerate(job.spec.tasks):
        path = f"spec.tasks[{i}]"
        if (why := dns1123_label_error(task.name)) is not None:
            errors.append(FieldError(f"{path}.name", why))
        elif task.name in first:
            errors.append(
                FieldError(f"{path}.name", f'duplicate task name "{task.name}" (also spec.tasks[{first[task.name]}])')
            )
        else:
            first[task.name] = i
            pod = f"{job.name}-{task.name}-{max(task.replicas - 1, 0)}"
            if len(pod) > 63:
                errors.append(FieldError(f"{path}.name", f'pod name "{pod}" would be longer than 63 characters'))
        if task.replicas < 0:
            errors.append(FieldError(f"{path}.replicas", "must be an integer >= 0"))
        if task.min_available is not None:
            if task.min_available < 0:
                errors.append(FieldError(f"{path}.minAvailable", "must be an integer >= 0"))
            elif task.min_available > task.replicas:
                errors.append(
                    FieldError(
                        f"{path}.minAvailable", f"{task.min_available} is more than the task's {task.replicas} replicas"
                    )
                )
        if task.max_retry < -1:
            errors.append(FieldError(f"{path}.maxRetry", "must be an integer >= -1 (-1 means unlimited)"))
        errors += _policies(task.policies, f"{path}.policies")
    return errors


def _policies(policies: Sequence[LifecyclePolicy], path: str) -> list[FieldError]:
    """One policy list (the job's, or one task's): each event and exit code is handled once."""
    errors: list[FieldError] = []
    event_owner: dict[str, int] = {}
    code_owner: dict[int, int] = {}
    for i, p in enumerate(policies):
        here = f"{path}[{i}]"
        if p.action not in USER_ACTIONS:
            errors.append(
                FieldError(f"{here}.action", f'unknown action "{p.action}"; allowed: {", ".join(USER_ACTIONS)}')
            )
        if p.events and p.exit_code is not None:
            errors.append(FieldError(here, "must not set both an event and an exitCode"))
        elif not p.events and p.exit_code is None:
            errors.append(FieldError(here, "must set an event, events or an exitCode"))
        event_path = f"{here}.event" if len(p.events) == 1 else f"{here}.events"
        for event in p.events:
            if event not in USER_EVENTS:
                errors.append(FieldError(event_path, f'unknown event "{event}"; allowed: {", ".join(USER_EVENTS)}'))
                continue
            owner = event_owner.setdefault(event, i)
            if owner != i:
                errors.append(FieldError(event_path, f"event {event} is already handled by {path}[{owner}]"))
            if event in _JOB_SCOPED_EVENTS and p.action in _TARGETED_ACTIONS:
                errors.append(
                    FieldError(
                        f"{here}.action",
                        f"{p.action} acts on the task or pod of the event, but {event} is raised for the whole job",
                    )
                )
        if p.exit_code is not None:
            if p.exit_code == 0:
                errors.append(FieldError(f"{here}.exitCode", "must not be 0: exit code 0 is success"))
            elif (owner := code_owner.setdefault(p.exit_code, i)) != i:
                errors.append(
                    FieldError(f"{here}.exitCode", f"exit code {p.exit_code} is already handled by {path}[{owner}]")
                )
        if p.timeout is not None and p.timeout <= 0:
            errors.append(FieldError(f"{here}.timeout", "must be a positive duration"))
    if "*" in event_owner and len(event_owner) > 1:
        errors.append(FieldError(path, '"*" matches every event, so no other event may appear in the same list'))
    return errors


def _plugins(spec: JobSpec) -> list[FieldError]:
    errors: list[FieldError] = []
    for name in spec.plugins:
        if name not in JOB_PLUGINS:
            errors.append(FieldError(f"spec.plugins.{name}", f"unknown job plugin; known: {', '.join(JOB_PLUGINS)}"))
    if "mpi" in spec.plugins:
        # As admit_job.go: the mpi plugin's master and worker tasks must exist.
        for role in ("master", "worker"):
            task = _flag(spec.plugins["mpi"], role, default=role)
            if spec.task(task) is None:
                errors.append(
                    FieldError(
                        "spec.plugins.mpi", f'the MPI {role} task "{task}" is not a task of this job (--{role}=NAME)'
                    )
                )
    return errors


def _flag(args: Sequence[str], name: str, default: str) -> str:
    """The value of Go-style flag `name` in `args` (`--name=v`, `-name=v`, `--name v`)."""
    for i, arg in enumerate(args):
        key, eq, value = arg.lstrip("-").partition("=")
        if arg.startswith("-") and key == name:
            if eq:
                return value
            if i + 1 < len(args):
                return args[i + 1]
    return default


def _dependencies(spec: JobSpec) -> list[FieldError]:
    errors: list[FieldError] = []
    index: dict[str, int] = {}
    for i, task in enumerate(spec.tasks):
        index.setdefault(task.name, i)
    graph: dict[str, list[str]] = {}
    for i, task in enumerate(spec.tasks):
        for j, dep in enumerate(task.depends_on):
            path = f"spec.tasks[{i}].dependsOn.name[{j}]"
            if dep == task.name:
                errors.append(FieldError(path, "a task cannot depend on itself"))
            elif dep not in index:
                errors.append(FieldError(path, f'no task named "{dep}" in this job'))
            else:
                graph.setdefault(task.name, []).append(dep)
    cycle = _find_cycle(graph, [t.name for t in spec.tasks])
    if cycle:
        errors.append(
            FieldError(
                f"spec.tasks[{index[cycle[0]]}].dependsOn",
                f"tasks depend on each other in a cycle: {' → '.join(cycle)}",
            )
        )
    return errors


def _find_cycle(graph: Mapping[str, Sequence[str]], order: Iterable[str]) -> list[str]:
    """One cycle of `graph` as [a, b, ..., a], or [] when it is acyclic; searched in `order`."""
    done: set[str] = set()
    for start in order:
        if start in done:
            continue
        trail: list[str] = [start]
        on_trail = {start}
        stack = [iter(graph.get(start, ()))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                node = trail.pop()
                on_trail.discard(node)
                done.add(node)
                continue
            if nxt in on_trail:
                return [*trail[trail.index(nxt) :], nxt]
            if nxt not in done:
                trail.append(nxt)
                on_trail.add(nxt)
                stack.append(iter(graph.get(nxt, ())))
    return []


# ---------------------------------------------------------------- queues and priority classes


def validate_queue(queue: Queue) -> list[FieldError]:
    spec = queue.spec
    errors: list[FieldError] = []
    if (why := dns1123_subdomain_error(queue.name)) is not None:
        errors.append(FieldError("metadata.name", why))
    if not 1 <= spec.weight <= MAX_QUEUE_WEIGHT:
        errors.append(FieldError("spec.weight", f"must be an integer between 1 and {MAX_QUEUE_WEIGHT}"))
    lists = (
        ("spec.capability", spec.capability),
        ("spec.guarantee.resource", spec.guarantee),
        ("spec.deserved", spec.deserved),
    )
    for path, resources in lists:
        for name, value in resources.items():
            if value < 0:
                errors.append(FieldError(f"{path}.{name}", "must not be negative"))
    for path, resources in lists[1:]:
        for name, value in resources.items():
            cap = spec.capability.get(name)
            if cap is not None and value > cap:
                errors.append(
                    FieldError(
                        f"{path}.{name}",
                        f"{from_units(name, value)} is more than the capability {from_units(name, cap)}",
                    )
                )
    if spec.parent and spec.parent == queue.name:
        errors.append(FieldError("spec.parent", "a queue cannot be its own parent"))
    if queue.state not in QUEUE_STATES:
        errors.append(FieldError("status.state", f'"{queue.state}" is not one of {", ".join(QUEUE_STATES)}'))
    return errors


def validate_priority_class(pc: PriorityClass) -> list[FieldError]:
    errors: list[FieldError] = []
    if (why := dns1123_subdomain_error(pc.name)) is not None:
        errors.append(FieldError("metadata.name", why))
    if pc.value < -(2**31):
        errors.append(FieldError("value", f"must be at least {-(2**31)}"))
    elif pc.value > MAX_USER_PRIORITY and not pc.name.startswith("system-"):
        errors.append(
            FieldError("value", f"must be at most {MAX_USER_PRIORITY}; higher values are for system- classes")
        )
    if pc.preemption_policy not in ("PreemptLowerPriority", "Never"):
        errors.append(FieldError("preemptionPolicy", f'"{pc.preemption_policy}" is not PreemptLowerPriority or Never'))
    return errors
