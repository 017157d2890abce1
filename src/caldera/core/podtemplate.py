"""Reading a Kubernetes PodTemplateSpec into caldera's PodTemplate.

Only the part of a pod that scheduling and the executors act on is modelled:
containers (command, env, resources, ports), restart policy, node selection,
tolerations, priority and grace period. Every other field is allowed and kept
untouched in `PodTemplate.raw`, which is what the Kubernetes backend sends on;
so here, unlike at the Job level, an unknown field is not an error.

Kubernetes' own defaults and rules are applied where they change what a pod asks
for: requests default to limits per resource, a request may not exceed its limit,
container names are unique, selector operators take the values they need.
"""

from __future__ import annotations

import copy

from caldera.core.objects import (
    Container,
    ContainerPort,
    EnvVar,
    NodeSelectorTerm,
    PodSpec,
    PodTemplate,
    SelectorRequirement,
    Toleration,
)
from caldera.core.resources import from_units
from caldera.core.schema import Doc, FieldReader, child, describe

RESTART_POLICIES = ("Always", "OnFailure", "Never")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")


def parse_pod_template(r: FieldReader, raw: object, path: str) -> PodTemplate:
    """The template at `path`; problems are recorded in `r` and a best-effort template returned."""
    doc = r.mapping(raw, path)
    if doc is None:
        if raw is None:
            r.error(path, "is required")
        return PodTemplate()
    meta = r.sub(doc, "metadata", path) or {}
    meta_path = child(path, "metadata")
    spec_path = child(path, "spec")
    spec_doc = r.sub(doc, "spec", path)
    if spec_doc is None:
        if doc.get("spec") is None:
            r.error(spec_path, "is required")
        spec = PodSpec()
    else:
        spec = _pod_spec(r, spec_doc, spec_path)
    return PodTemplate(
        labels=r.string_map(meta, "labels", meta_path),
        annotations=r.string_map(meta, "annotations", meta_path),
        spec=spec,
        # A deep copy: the caller's dict may be reused, and executors must see it as written.
        raw=copy.deepcopy(dict(doc)),
    )


def _pod_spec(r: FieldReader, doc: Doc, path: str) -> PodSpec:
    if doc.get("containers") in (None, []):
        r.error(child(path, "containers"), "must list at least one container")
    containers = _containers(r, doc, "containers", path)
    init_containers = _containers(r, doc, "initContainers", path)
    seen: dict[str, str] = {}
    for key, group in (("containers", containers), ("initContainers", init_containers)):
        for i, c in enumerate(group):
            here = f"{child(path, key)}[{i}].name"
            if c.name in seen:
                r.error(here, f"duplicate container name {c.name!r} (also {seen[c.name]})")
            seen.setdefault(c.name, here)
    grace = r.integer(doc, "terminationGracePeriodSeconds", path)
    if grace is not None and grace < 0:
        r.error(child(path, "terminationGracePeriodSeconds"), "must be an integer >= 0")
        grace = None
    return PodSpec(
        containers=containers,
        init_containers=init_containers,
        restart_policy=r.choice(doc, "restartPolicy", path, RESTART_POLICIES, "Always"),
        node_selector=r.string_map(doc, "nodeSelector", path),
        node_affinity=_node_affinity(r, doc, path),
        tolerations=tuple(_toleration(r, v, here) for here, v in r.items(doc, "tolerations", path)),
        priority_class_name=r.string(doc, "priorityClassName", path),
        scheduler_name=r.string(doc, "schedulerName", path),
        termination_grace_period_seconds=30.0 if grace is None else float(grace),
    )


def _containers(r: FieldReader, doc: Doc, key: str, path: str) -> tuple[Container, ...]:
    out: list[Container] = []
    for here, value in r.items(doc, key, path):
        c = r.mapping(value, here)
        if c is None:
            if value is None:
                r.error(here, "must be a mapping, not null")
            continue
        out.append(_container(r, c, here))
    return tuple(out)


def _container(r: FieldReader, doc: Doc, path: str) -> Container:
    r.required(doc, "name", path)
    res_path = child(path, "resources")
    res = r.sub(doc, "resources", path) or {}
    limits = r.resources(res, "limits", res_path)
    requests = r.resources(res, "requests", res_path)
    for name, limit in limits.items():
        if name not in requests:
            # Kubernetes defaults a missing request to its limit, resource by resource.
            requests[name] = limit
        elif requests[name] > limit:
            r.error(
                child(child(res_path, "requests"), name),
                f"{from_units(name, requests[name])} is more than the limit {from_units(name, limit)}",
            )
    return Container(
        name=r.string(doc, "name", path),
        image=r.string(doc, "image", path),
        command=r.strings(doc, "command", path),
        args=r.strings(doc, "args", path),
        env=tuple(e for here, v in r.items(doc, "env", path) if (e := _env_var(r, v, here)) is not None),
        working_dir=r.string(doc, "workingDir", path),
        requests=requests,
        limits=limits,
        ports=tuple(p for here, v in r.items(doc, "ports", path) if (p := _port(r, v, here)) is not None),
    )


def _env_var(r: FieldReader, value: object, path: str) -> EnvVar | None:
    doc = r.mapping(value, path)
    if doc is None:
        return None
    if not r.required(doc, "name", path):
        return None
    name = r.string(doc, "name", path)
    if not isinstance(doc.get("value"), str | None):
        # An unquoted `value: 1` is a number; Kubernetes refuses it, and so do we.
        r.error(child(path, "value"), f"must be a string, not {describe(doc.get('value'))} (quote it)")
        return None
    env_value = doc.get("value")
    field_path: str | None = None
    source = r.sub(doc, "valueFrom", path)
    if source is not None:
        source_path = child(path, "valueFrom")
        field_ref = r.sub(source, "fieldRef", source_path)
        if field_ref is not None:
            ref_path = child(source_path, "fieldRef")
            if r.required(field_ref, "fieldPath", ref_path):
                field_path = r.string(field_ref, "fieldPath", ref_path) or None
        # Other sources (configMapKeyRef, secretKeyRef, ...) stay in the raw template.
        if env_value is not None:
            r.error(path, "must not set both value and valueFrom")
    return EnvVar(name=name, value=env_value if isinstance(env_value, str) else None, field_path=field_path)


def _port(r: FieldReader, value: object, path: str) -> ContainerPort | None:
    doc = r.mapping(value, path)
    if doc is None or not r.required(doc, "containerPort", path):
        return None
    port = r.integer(doc, "containerPort", path)
    if port is None:
        return None
    if not 0 < port < 65536:
        r.error(child(path, "containerPort"), "must be an integer between 1 and 65535")
        return None
    return ContainerPort(container_port=port, name=r.string(doc, "name", path))


def _node_affinity(r: FieldReader, doc: Doc, path: str) -> tuple[NodeSelectorTerm, ...]:
    """The required node affinity terms; preferred terms and pod (anti-)affinity stay in the raw template."""
    here = child(path, "affinity")
    affinity = r.sub(doc, "affinity", path) or {}
    here = child(here, "nodeAffinity")
    node = r.mapping(affinity.get("nodeAffinity"), here) or {}
    key = "requiredDuringSchedulingIgnoredDuringExecution"
    required = r.sub(node, key, here)
    if required is None:
        return ()
    terms: list[NodeSelectorTerm] = []
    for term_path, value in r.items(required, "nodeSelectorTerms", child(here, key)):
        term = r.mapping(value, term_path)
        if term is None:
            continue
        if term.get("matchFields"):
            # Ignoring it would place the pod on nodes the user excluded.
            r.error(child(term_path, "matchFields"), "is not supported by caldera yet; use matchExpressions")
        reqs = tuple(
            req
            for req_path, v in r.items(term, "matchExpressions", term_path)
            if (req := _requirement(r, v, req_path)) is not None
        )
        terms.append(NodeSelectorTerm(match_expressions=reqs))
    return tuple(terms)


def _requirement(r: FieldReader, value: object, path: str) -> SelectorRequirement | None:
    doc = r.mapping(value, path)
    if doc is None:
        return None
    r.required(doc, "key", path)
    r.required(doc, "operator", path)
    op = r.choice(doc, "operator", path, SELECTOR_OPERATORS, "In")
    values = r.strings(doc, "values", path)
    values_path = child(path, "values")
    if op in ("In", "NotIn") and not values:
        r.error(values_path, f"must not be empty for operator {op}")
    elif op in ("Exists", "DoesNotExist") and values:
        r.error(values_path, f"must be empty for operator {op}")
    elif op in ("Gt", "Lt") and (len(values) != 1 or not values[0].lstrip("-").isdigit()):
        r.error(values_path, f"must be a single integer for operator {op}")
    return SelectorRequirement(key=r.string(doc, "key", path), operator=op, values=values)


def _toleration(r: FieldReader, value: object, path: str) -> Toleration:
    doc = r.mapping(value, path) or {}
    key = r.string(doc, "key", path)
    op = r.choice(doc, "operator", path, TOLERATION_OPERATORS, "Equal")
    tol_value = r.string(doc, "value", path)
    if op == "Exists" and tol_value:
        r.error(child(path, "value"), "must be empty when operator is Exists")
    if not key and op != "Exists":
        r.error(child(path, "operator"), "must be Exists when key is empty")
    effect = r.choice(doc, "effect", path, TAINT_EFFECTS, "")
    return Toleration(key=key, operator=op, value=tol_value, effect=effect)
