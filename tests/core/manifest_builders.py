"""Keyword-only builders of manifest dicts, as a user would write them, for the core tests."""

from __future__ import annotations

from typing import Any

from caldera.core.errors import ValidationError


def container_manifest(*, name: str = "main", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "command": ["sleep", "1"], **fields}


def task_manifest(
    *,
    name: str | None = "worker",
    replicas: Any = 2,  # Any: tests also write what a user should not
    containers: list[Any] | None = None,
    pod: dict[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A task; `pod` adds fields to the template's pod spec."""
    spec: dict[str, Any] = {"containers": containers if containers is not None else [container_manifest()]}
    spec.update(pod or {})
    out: dict[str, Any] = {"template": {"spec": spec}, **fields}
    if name is not None:
        out["name"] = name
    if replicas is not None:
        out["replicas"] = replicas
    return out


def job_manifest(*, name: str = "train", tasks: Any = None, **spec: Any) -> dict[str, Any]:
    """A Volcano Job; keyword arguments are spec fields in the manifest's spelling."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"tasks": tasks if tasks is not None else [task_manifest()], **spec},
    }


def queue_manifest(*, name: str = "research", status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }
    if status is not None:
        out["status"] = status
    return out


def messages(error: ValidationError) -> list[str]:
    """Each error as the user reads it: `path: rule`."""
    return [str(e) for e in error.errors]


def has_error(error: ValidationError, path: str, rule_part: str) -> bool:
    return any(e.path == path and rule_part in e.rule for e in error.errors)
