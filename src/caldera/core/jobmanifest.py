"""Reading a Volcano `batch.volcano.sh/v1alpha1` Job manifest into a Job.

The defaults are those of Volcano's mutating webhook (`mutate_job.go`): queue
`default`, schedulerName `volcano`, maxRetry 3 (job and task), task names
`default<i>`, job minAvailable the sum of the tasks' (each task's minAvailable,
else its replicas), the job's priority class and scheduler for pods that name none,
and the `svc` and `ssh` plugins that the framework plugins need. Like the webhook,
an int field the webhook defaults reads 0 as unset (Go cannot tell them apart), so
`maxRetry: 0` means 3. A task's own minAvailable stays None when absent:
`TaskSpec.min_members` gives the effective value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from caldera.core.duration import parse_duration
from caldera.core.objects import JOB_API, Job, JobSpec, LifecyclePolicy, TaskSpec
from caldera.core.podtemplate import parse_pod_template
from caldera.core.schema import Doc, FieldReader, child, describe, raise_if_any
from caldera.core.validation import validate_job

_SPEC_FIELDS = (
    "schedulerName",
    "minAvailable",
    "tasks",
    "policies",
    "plugins",
    "queue",
    "maxRetry",
    "ttlSecondsAfterFinished",
    "priorityClassName",
    "minSuccess",
    "runningEstimate",  # declared by Volcano but read by nothing there either: accepted and dropped
    "volumes",
    "networkTopology",
)
_TASK_FIELDS = (
    "name",
    "replicas",
    "minAvailable",
    "template",
    "policies",
    "maxRetry",
    "dependsOn",
    "topologyPolicy",
    "partitionPolicy",
)
_POLICY_FIELDS = ("event", "events", "exitCode", "action", "timeout")
# Volcano fields caldera does not implement, with the values that mean "off" and so may stay.
_SPEC_UNSUPPORTED: dict[str, tuple[object, ...]] = {"volumes": (), "networkTopology": ()}
_TASK_UNSUPPORTED: dict[str, tuple[object, ...]] = {"topologyPolicy": ("", "none"), "partitionPolicy": ()}
# The webhook adds `svc` for frameworks that find their peers through its host lists, and `ssh` for MPI.
_NEEDS_SVC = ("tensorflow", "mpi", "pytorch")
_DEFAULT_MAX_RETRY = 3
# Tasks read without a problem, by what they were read from (see `_task`); emptied when full.
_READ_TASKS: dict[tuple[str, int, str, str], TaskSpec] = {}
_READ_TASKS_MAX = 4096


def parse_job(doc: Mapping[str, Any], source: str = "") -> Job:
    """A `batch.volcano.sh/v1alpha1` Job with Volcano's webhook defaults, checked by `validate_job`."""
    r = FieldReader()
    top = r.top(doc, source, api=JOB_API, kind="Job")
    meta = r.metadata(top, namespaced=True)
    spec_doc = r.sub(top, "spec", "")
    if spec_doc is None:
        if top.get("spec") is None:
            r.error("spec", "is required")
        spec_doc = {}
    spec = _job_spec(r, spec_doc)
    r.raise_if_errors(source)
    job = Job(metadata=meta, spec=spec)
    raise_if_any(validate_job(job), source)
    return job


def _job_spec(r: FieldReader, doc: Doc) -> JobSpec:
    path = "spec"
    r.known(doc, path, _SPEC_FIELDS)
    r.refuse_unsupported(doc, path, _SPEC_UNSUPPORTED)
    scheduler = r.string(doc, "schedulerName", path) or "volcano"
    priority_class = r.string(doc, "priorityClassName", path)
    if doc.get("tasks") in (None, []):
        r.error(child(path, "tasks"), "must have at least one task")
    tasks = [
        task
        for i, (here, raw) in enumerate(r.items(doc, "tasks", path))
        if (task := _task(r, raw, here, index=i, scheduler=scheduler, priority_class=priority_class)) is not None
    ]
    max_retry = r.integer(doc, "maxRetry", path)
    min_available = r.integer(doc, "minAvailable", path)
    return JobSpec(
        tasks=tuple(tasks),
        # 0 counts as unset, as in the webhook: Go cannot tell the two apart.
        min_available=min_available or sum(t.min_members for t in tasks),
        queue=r.string(doc, "queue", path) or "default",
        scheduler_name=scheduler,
        policies=_policies(r, doc, path),
        plugins=_plugins(r, doc, path),
        max_retry=max_retry or _DEFAULT_MAX_RETRY,
        ttl_seconds_after_finished=r.integer(doc, "ttlSecondsAfterFinished", path),
        priority_class_name=priority_class,
        min_success=r.integer(doc, "minSuccess", path),
    )


def _task(
    r: FieldReader, raw: object, path: str, *, index: int, scheduler: str, priority_class: str
) -> TaskSpec | None:
    """The task at `path`. Workloads repeat one task thousands of times under different job names, so a
    task read without a problem is kept by the text of what it was read from (a YAML or JSON document's
    repr names every value with its type) and what the job lends it: reading the same again gives an equal,
    immutable TaskSpec and no error, so the kept one is handed out. A task with a problem is read every
    time, so its errors name their own paths."""
    if not isinstance(raw, Mapping):
        return _read_task(r, raw, path, index=index, scheduler=scheduler, priority_class=priority_class)
    key = (repr(raw), index, scheduler, priority_class)
    task = _READ_TASKS.get(key)
    if task is not None:
        return task
    errors = len(r.errors)
    task = _read_task(r, raw, path, index=index, scheduler=scheduler, priority_class=priority_class)
    if task is not None and len(r.errors) == errors:
        if len(_READ_TASKS) >= _READ_TASKS_MAX:
            _READ_TASKS.clear()
        _READ_TASKS[key] = task
    return task


def _read_task(
    r: FieldReader, raw: object, path: str, *, index: int, scheduler: str, priority_class: str
) -> TaskSpec | None:
    doc = r.mapping(raw, path)
    if doc is None:
        if raw is None:
            r.error(path, "must be a mapping, not null")
        return None
    r.known(doc, path, _TASK_FIELDS)
    r.refuse_unsupported(doc, path, _TASK_UNSUPPORTED)
    # A task without a replica count is almost always a mistake, so unlike Volcano (0) it is required.
    r.required(doc, "replicas", path)
    template = parse_pod_template(r, doc.get("template"), child(path, "template"))
    # Pods inherit the job's scheduler and priority class unless their template names its own.
    pod_spec = dataclasses.replace(
        template.spec,
        scheduler_name=template.spec.scheduler_name or scheduler,
        priority_class_name=template.spec.priority_class_name or priority_class,
    )
    return TaskSpec(
        name=r.string(doc, "name", path) or f"default{index}",
        replicas=r.integer(doc, "replicas", path) or 0,
        template=dataclasses.replace(template, spec=pod_spec),
        min_available=r.integer(doc, "minAvailable", path),
        policies=_policies(r, doc, path),
        max_retry=r.integer(doc, "maxRetry", path) or _DEFAULT_MAX_RETRY,
        depends_on=_depends_on(r, doc, path),
    )


def _policies(r: FieldReader, doc: Doc, path: str) -> tuple[LifecyclePolicy, ...]:
    out: list[LifecyclePolicy] = []
    for here, raw in r.items(doc, "policies", path):
        p = r.mapping(raw, here)
        if p is None:
            if raw is None:
                r.error(here, "must be a mapping, not null")
            continue
        r.known(p, here, _POLICY_FIELDS)
        r.required(p, "action", here)
        events = list(r.strings(p, "events", here))
        if event := r.string(p, "event", here):
            events.append(event)  # Volcano appends `event` to `events`, then drops repeats
        out.append(
            LifecyclePolicy(
                action=r.string(p, "action", here),
                events=tuple(dict.fromkeys(events)),
                exit_code=r.integer(p, "exitCode", here),
                timeout=_duration(r, p, "timeout", here),
            )
        )
    return tuple(out)


def _duration(r: FieldReader, doc: Doc, key: str, path: str) -> float | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        r.error(child(path, key), f"must be a duration like 30s, 5m or 1h30m, not {describe(value)}")
        return None
    try:
        return parse_duration(value)
    except ValueError as e:
        r.error(child(path, key), str(e))
        return None


def _plugins(r: FieldReader, doc: Doc, path: str) -> dict[str, tuple[str, ...]]:
    here = child(path, "plugins")
    raw = r.mapping(doc.get("plugins"), here)
    if raw is None:
        return {}
    plugins = {name: r.strings(raw, name, here) for name in raw}
    if any(name in plugins for name in _NEEDS_SVC):
        plugins.setdefault("svc", ())
    if "mpi" in plugins:
        plugins.setdefault("ssh", ())
    return plugins


def _depends_on(r: FieldReader, doc: Doc, path: str) -> tuple[str, ...]:
    here = child(path, "dependsOn")
    raw = r.mapping(doc.get("dependsOn"), here)
    if raw is None:
        return ()
    r.known(raw, here, ("name", "iteration"))
    # caldera starts a task once all it depends on are ready: Volcano's default iteration, `all`.
    r.refuse_unsupported(raw, here, {"iteration": ("all",)})
    return r.strings(raw, "name", here)
