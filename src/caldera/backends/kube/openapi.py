"""Building blocks of structural OpenAPI v3 schemas and CustomResourceDefinitions (for `crds`).

Each function returns a fresh dict: `integer()`, `string()`, `strings()`, `mapping(values)`,
`obj(properties, required=, rules=)` (rules are CEL `x-kubernetes-validations`), `free()` (an
object the server keeps as given), `quantity()`, `resources()`, `timestamp()`; `cel_list` writes a
CEL list literal, `unsupported` a rule refusing a field caldera does not implement; `column` and
`crd` wrap a schema into a CRD of one served version.

Invariant: only dicts are built; no I/O.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]

CRD_API = "apiextensions.k8s.io/v1"
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

Rule = tuple[str, str] | tuple[str, str, str]  # (CEL, message) or (CEL, message, the field it is about)


def integer(minimum: int | None = None, **more: Any) -> JSON:
    out: JSON = {"type": "integer", "format": "int32", **more}
    if minimum is not None:
        out["minimum"] = minimum
    return out


def string(**more: Any) -> JSON:
    return {"type": "string", **more}


def strings(**item: Any) -> JSON:
    return {"type": "array", "items": string(**item)}


def mapping(values: JSON) -> JSON:
    return {"type": "object", "additionalProperties": values}


def obj(properties: JSON, *, required: tuple[str, ...] = (), rules: tuple[Rule, ...] = ()) -> JSON:
    out: JSON = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    if rules:
        out["x-kubernetes-validations"] = [rule(*r) for r in rules]
    return out


def rule(cel: str, message: str, field: str = "") -> JSON:
    """A CEL rule; `field` (".minAvailable") makes the API server report the error at that field's path."""
    out: JSON = {"rule": cel, "message": message}
    if field:
        out["fieldPath"] = field
    return out


def free(**more: Any) -> JSON:
    """An object the server keeps as given (a pod spec: Kubernetes checks it when the pod is created)."""
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, **more}


def quantity() -> JSON:
    return {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True, "pattern": QUANTITY}


def resources() -> JSON:
    return mapping(quantity())


def timestamp() -> JSON:
    return string(format="date-time")


def cel_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def unsupported(field: str, present: str) -> Rule:
    return (f"!({present})", "is not supported by caldera: it would be ignored, so it is refused", f".{field}")


def column(name: str, kind: str, path: str, priority: int = 0) -> JSON:
    """An additionalPrinterColumn (what `kubectl get` shows)."""
    out: JSON = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        out["priority"] = priority
    return out


def crd(
    api_version: str,
    kind: str,
    plural: str,
    scope: str,
    schema: JSON,
    *,
    short: tuple[str, ...] = (),
    status: bool = False,
    columns: list[JSON] | None = None,
) -> JSON:
    """A CustomResourceDefinition of one served and stored version, labelled as caldera's."""
    group, version = api_version.split("/")
    names: JSON = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()}
    if short:
        names["shortNames"] = list(short)
    served: JSON = {"name": version, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
    if status:
        served["subresources"] = {"status": {}}
    if columns:
        served["additionalPrinterColumns"] = columns
    return {
        "apiVersion": CRD_API,
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "labels": {"app.kubernetes.io/part-of": "caldera"}},
        "spec": {"group": group, "names": names, "scope": scope, "versions": [served]},
    }
