"""What the daemon checks before it stores a job, beyond the manifest's own rules: what this machine can run.

`check_plugins` renders every task's first pod once, so a plugin flag that names no task or
a bad port is refused at apply instead of failing every pod; `check_commands` refuses a
command that does not exist here; `check_data` a `caldera.dev/data` annotation that is
malformed, names a source that does not exist, or whose link would replace something else
in the working directory; `check_size` a job with more pods than the embedded cluster runs
for one job (MAX_PODS_PER_JOB: each pod is processes on this machine; docs/limits.md). Errors
name the field path, as validation's do.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from pathlib import Path

from caldera.controller.frameworks import PluginError, job_ports, render
from caldera.core import objects as o
from caldera.core.addresses import MappedAddresses
from caldera.core.elastic import max_replicas
from caldera.core.errors import FieldError, ValidationError
from caldera.system.podpaths import DATA, DataMount, conflict, parse_data, path_map, rewrite
from caldera.system.runtime import HOST, LocalRuntime, working_dir

MAX_PODS_PER_JOB = 10_000  # every pod is a process group here: far beyond this, one machine cannot run them


def check_size(job: o.Job) -> None:
    """Refuse a job of more pods than the embedded cluster runs for one job, naming the task that goes over."""
    total = 0
    for i, task in enumerate(job.spec.tasks):
        pods = max_replicas(job, task)
        total += pods
        if total > MAX_PODS_PER_JOB:
            rule = (
                f"{pods} pods make the job's {total} more than the {MAX_PODS_PER_JOB} "
                "an embedded cluster runs for one job (docs/limits.md)"
            )
            raise ValidationError([FieldError(f"spec.tasks[{i}].replicas", rule)], f"job {job.name}")


def check_plugins(job: o.Job) -> None:
    """Refuse a job its plugins cannot wire (a role flag naming no task, a bad port, ...): none of its pods could start."""
    try:
        addresses = MappedAddresses(HOST, {slot: slot[1] for slot in job_ports(job)})
        for task in job.spec.tasks:
            if task.replicas > 0:
                render(job, task, 0, addresses)
    except PluginError as e:
        raise ValidationError([FieldError("spec.plugins", str(e))], f"job {job.name}") from None


def check_commands(job: o.Job, submit_dir: str | None) -> None:
    """Refuse a job whose command does not exist here (the error names the task), before anything is stored."""
    errors: list[FieldError] = []
    for i, task in enumerate(job.spec.tasks):
        for j, c in enumerate(task.template.spec.containers[:1]):
            path = f"spec.tasks[{i}].template.spec.containers[{j}].command"
            argv = (*c.command, *c.args)
            if not argv:
                errors.append(
                    FieldError(path, "a command is required: the embedded cluster runs it as a local process")
                )
                continue
            exe = rewrite(argv[0], path_map(_mounts(task)))
            if "/" in exe:
                base = (
                    Path(c.working_dir)
                    if c.working_dir and Path(c.working_dir).is_absolute()
                    else Path(submit_dir or ".")
                )
                if c.working_dir and not Path(c.working_dir).is_absolute():
                    base = base / c.working_dir
                if not (Path(exe) if Path(exe).is_absolute() else base / exe).exists():
                    errors.append(FieldError(path, f"{exe!r} does not exist"))
            elif not on_path(exe, LocalRuntime.base_env()["PATH"]):
                errors.append(FieldError(path, f"command {exe!r} not found on PATH"))
    if errors:
        raise ValidationError(errors, f"job {job.name}")


_FOUND: dict[tuple[str, str], str] = {}  # (command, PATH) → where it was found last


def on_path(command: str, path: str) -> bool:
    """Whether `command` is an executable on `path`. A place found before is checked first (one access(2)
    instead of a stat per PATH entry, for every submission); a command gone from there is looked up again."""
    found = _FOUND.get((command, path))
    if found is not None and os.access(found, os.X_OK):
        return True
    found = shutil.which(command, path=path)
    if found is None:
        _FOUND.pop((command, path), None)
        return False
    if len(_FOUND) >= 1024:  # commands people submit are few; a flood of distinct names must not pile up
        _FOUND.clear()
    _FOUND[(command, path)] = found
    return True


def check_data(job: o.Job) -> None:
    """Refuse data the pods could not be given (see the module docstring), before anything is stored."""
    errors: list[FieldError] = []
    for i, task in enumerate(job.spec.tasks):
        spec = task.template.annotations.get(DATA)
        if not spec:
            continue
        path = f"spec.tasks[{i}].template.metadata.annotations[{DATA}]"
        try:
            mounts = parse_data(spec)
        except ValueError as e:
            errors.append(FieldError(path, str(e)))
            continue
        errors.extend(FieldError(path, f"{m.source} does not exist") for m in mounts if not Path(m.source).exists())
        containers = task.template.spec.containers[:1]
        if not containers or not containers[0].working_dir:
            continue  # relative targets are linked in the pod's own directory: nothing there to replace
        cwd = working_dir(containers[0], job, Path("."), path_map(mounts))
        for m in mounts:
            why = "" if posixpath.isabs(m.target) else conflict(cwd / m.target, m.source)
            if why:
                errors.append(FieldError(path, f"{why}: choose another target, or remove it"))
    if errors:
        raise ValidationError(errors, f"job {job.name}")


def _mounts(task: o.TaskSpec) -> list[DataMount]:
    try:
        return parse_data(task.template.annotations.get(DATA, ""))
    except ValueError:
        return []  # check_data says why
