"""Where a request goes and what it carries besides its body: REST paths of resources, query parameters,
DeleteOptions.

`resource_path("v1", "pods", namespace="ns", name="p", subresource="binding")` is
`/api/v1/namespaces/ns/pods/p/binding`; any group other than the core one is under `/apis/<group>/<version>`.
Names are quoted as one path segment each, so a name can never reach another path.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

from caldera.backends.kube.errors import JSON


def resource_path(
    api_version: str,
    resource: str,
    *,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    """The REST path of a resource: `v1` is the core group (/api/v1), anything else /apis/<group>/<version>."""
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    parts = [base]
    if namespace is not None:
        parts.append(f"namespaces/{segment(namespace)}")
    parts.append(resource)
    if name is not None:
        parts.append(segment(name))
    if subresource is not None:
        if name is None:
            raise ValueError("a subresource needs the object's name")
        parts.append(subresource)
    return "/".join(parts)


def request_kind(path: str) -> str:
    """What a request is about, for counting: `pods`, `pods/binding`, `jobs/status` (no names, no namespaces)."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    rest = parts[2:] if parts[0] == "api" else parts[3:]  # after /api/v1 or /apis/<group>/<version>
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]  # a namespaced resource (not the namespace itself)
    if not rest:
        return "/".join(parts)
    return rest[0] if len(rest) <= 2 else f"{rest[0]}/{rest[2]}"


def segment(value: str) -> str:
    return quote(value, safe="")


def query(**values: str | int | bool | None) -> dict[str, str | int | bool]:
    """Query parameters, those given as None left out."""
    return {k: v for k, v in values.items() if v is not None}


def query_value(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def delete_options(
    grace_period_seconds: int | None, propagation_policy: str | None, preconditions: Mapping[str, str] | None
) -> JSON:
    options: JSON = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    if propagation_policy is not None:
        options["propagationPolicy"] = propagation_policy
    if preconditions:
        options["preconditions"] = dict(preconditions)
    return options
