"""Reading Volcano, Kubeflow and Kubernetes manifests as they are written, into caldera's objects.

A Kubeflow training job (`kubeflow.org/v1` TFJob, PyTorchJob, MPIJob, PaddleJob) is read
as the Volcano Job it runs as (`caldera.core.kubeflow`).

A manifest goes through three steps, and no object comes out unless all pass:
1. schema: types and shapes, every error against the field path in the manifest's own
   spelling (`spec.tasks[1].replicas`). At the levels caldera models fully (a Job's
   spec, its tasks and policies, a Queue's spec) an unknown field is a typo and an
   error; inside a pod template it is kept (see `podtemplate`). The reading itself is
   in `schema`; Jobs are read by `jobmanifest`, their pod templates by `podtemplate`.
2. defaults: what Volcano's mutating webhook fills in (`mutate_job.go`,
   `mutate_queue.go`), including its reading of an int field set to 0 as unset:
   job `minAvailable`, job and task `maxRetry` and queue `weight`.
3. the admission rules that need no cluster state (`caldera.core.validation`).
All problems found by a step are reported together, as one ValidationError.

A Volcano field that caldera does not implement is refused rather than ignored
(unless it is at its default), so a manifest never runs differently from what it asks.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any

import yaml

from caldera.core.errors import FieldError, ValidationError
from caldera.core.jobmanifest import parse_job
from caldera.core.kubeflow import FRAMEWORKS, KUBEFLOW_API, kubeflow_error, to_volcano
from caldera.core.loading import SafeLoader
from caldera.core.objects import (
    JOB_API,
    QUEUE_OPEN,
    SCHEDULING_API,
    Job,
    PriorityClass,
    Queue,
    QueueSpec,
)
from caldera.core.schema import Doc, FieldReader, child, describe, raise_if_any
from caldera.core.validation import QUEUE_STATES, validate_priority_class, validate_queue

PRIORITY_CLASS_API = "scheduling.k8s.io/v1"

ManifestObject = Job | Queue | PriorityClass

__all__ = [
    "PRIORITY_CLASS_API",
    "ManifestObject",
    "load_documents",
    "load_objects",
    "parse_job",
    "parse_kubeflow_job",
    "parse_object",
    "parse_priority_class",
    "parse_queue",
]

_QUEUE_SPEC_FIELDS = (
    "weight",
    "capability",
    "guarantee",
    "deserved",
    "reclaimable",
    "parent",
    "priority",
    "state",
    "type",  # informational in Volcano: accepted and dropped
    "extendClusters",
    "affinity",
    "dequeueStrategy",
)
# Volcano fields caldera does not implement, with the values that mean "off" and so may stay.
_QUEUE_UNSUPPORTED: dict[str, tuple[object, ...]] = {
    "extendClusters": (),
    "affinity": (),
    "dequeueStrategy": ("traverse",),  # Volcano's default: skip a blocked head of the queue
}


# ---------------------------------------------------------------- documents


if TYPE_CHECKING:
    _Loader = yaml.SafeLoader
else:
    _Loader = SafeLoader  # libyaml's where installed


class _StrictLoader(_Loader):
    """YAML's safe loader, refusing a key given twice (PyYAML keeps the last one silently; kubectl refuses)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[Hashable] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                continue  # the base class reports an unhashable key
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_documents(text: str, source: str) -> list[dict[str, Any]]:
    """The non-empty documents of a multi-document YAML stream, each a mapping."""
    return [doc for _, doc in _documents(text, source)]


def load_objects(text: str, source: str) -> list[ManifestObject]:
    """Every object of a YAML stream, parsed; all problems of all documents in one ValidationError.

    With more than one document, paths start with `document[i]` (its place in the stream)."""
    docs = _documents(text, source)
    objects: list[ManifestObject] = []
    errors: list[FieldError] = []
    for index, doc in docs:
        try:
            objects.append(parse_object(doc, source))
        except ValidationError as e:
            prefix = f"document[{index}]" if len(docs) > 1 else ""
            errors += e.with_source(source, prefix).errors
    if errors:
        raise ValidationError(errors, source)
    return objects


def _documents(text: str, source: str) -> list[tuple[int, dict[str, Any]]]:
    try:
        raw = list(yaml.load_all(text, Loader=_StrictLoader))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        what = e.problem or e.context or "invalid YAML"
        raise ValidationError([FieldError("", f"YAML syntax error{where}: {what}")], source) from None
    except yaml.YAMLError as e:
        raise ValidationError([FieldError("", f"YAML error: {e}")], source) from None
    out: list[tuple[int, dict[str, Any]]] = []
    errors: list[FieldError] = []
    for i, doc in enumerate(raw):
        if doc is None:
            continue
        if isinstance(doc, dict):
            out.append((i, doc))
        else:
            errors.append(
                FieldError(f"document[{i}]", f"must be a mapping with apiVersion and kind, not {describe(doc)}")
            )
    if errors:
        raise ValidationError(errors, source)
    return out


# ---------------------------------------------------------------- dispatch


def parse_object(doc: Mapping[str, Any], source: str = "") -> ManifestObject:
    """A Job, Queue or PriorityClass, chosen by the document's apiVersion and kind."""
    if not isinstance(doc, Mapping):
        raise ValidationError(
            [FieldError("", f"must be a mapping with apiVersion and kind, not {describe(doc)}")], source
        )
    api, kind = doc.get("apiVersion"), doc.get("kind")
    missing = [FieldError(key, "is required") for key, value in (("apiVersion", api), ("kind", kind)) if value is None]
    if missing:
        raise ValidationError(missing, source)
    parser = _PARSERS.get((str(api), str(kind)))
    if parser is not None:
        return parser(doc, source)
    same_kind = [a for a, k in _PARSERS if k == kind]
    if same_kind:
        rule = f"a {kind} is read as {same_kind[0]}, not {api}"
        raise ValidationError([FieldError("apiVersion", rule)], source)
    known = ", ".join(f"{a} {k}" for a, k in _PARSERS)
    raise ValidationError([FieldError("kind", f"caldera does not read {kind} ({api}); it reads {known}")], source)


# ---------------------------------------------------------------- queue and priority class


def parse_queue(doc: Mapping[str, Any], source: str = "") -> Queue:
    """A `scheduling.volcano.sh/v1beta1` Queue (cluster-scoped), checked by `validate_queue`."""
    r = FieldReader()
    top = r.top(doc, source, api=SCHEDULING_API, kind="Queue")
    meta = r.metadata(top, namespaced=False)
    spec = r.sub(top, "spec", "") or {}
    r.known(spec, "spec", _QUEUE_SPEC_FIELDS)
    r.refuse_unsupported(spec, "spec", _QUEUE_UNSUPPORTED)
    guarantee: dict[str, float] = {}
    if (g := r.sub(spec, "guarantee", "spec")) is not None:
        for key in g:
            if key != "resource":
                # Volcano nests the list one level down, unlike capability and deserved: an easy slip.
                r.error(
                    child("spec.guarantee", key), "unknown field; guaranteed resources go under spec.guarantee.resource"
                )
        guarantee = r.resources(g, "resource", "spec.guarantee")
    status = r.sub(top, "status", "") or {}
    # What the manifest asks (spec.state) wins over what a dump observed (status.state).
    state = _queue_state(r, spec, "spec") or _queue_state(r, status, "status") or QUEUE_OPEN
    queue_spec = QueueSpec(
        # 0 counts as unset, as in the webhook.
        weight=r.integer(spec, "weight", "spec") or 1,
        capability=r.resources(spec, "capability", "spec"),
        guarantee=guarantee,
        deserved=r.resources(spec, "deserved", "spec"),
        reclaimable=r.boolean(spec, "reclaimable", "spec", True),
        parent=r.string(spec, "parent", "spec"),
        priority=r.integer(spec, "priority", "spec") or 0,
    )
    r.raise_if_errors(source)
    queue = Queue(metadata=meta, spec=queue_spec, state=state)
    raise_if_any(validate_queue(queue), source)
    return queue


def _queue_state(r: FieldReader, doc: Doc, path: str) -> str:
    state = r.string(doc, "state", path)
    if state and state not in QUEUE_STATES:
        r.error(child(path, "state"), f"{state!r} is not one of {', '.join(QUEUE_STATES)}")
        return ""
    return state


def parse_priority_class(doc: Mapping[str, Any], source: str = "") -> PriorityClass:
    """A `scheduling.k8s.io/v1` PriorityClass, or the short form `{name: high, value: 1000}`."""
    r = FieldReader()
    body = ("value", "globalDefault", "preemptionPolicy", "description")
    full = isinstance(doc, Mapping) and any(k in doc for k in ("apiVersion", "kind", "metadata"))
    if full:
        fields = ("apiVersion", "kind", "metadata", *body)
        top = r.top(doc, source, api=PRIORITY_CLASS_API, kind="PriorityClass", fields=fields)
        name = r.metadata(top, namespaced=False).name
    else:
        top = r.top(doc, source, api=PRIORITY_CLASS_API, kind="PriorityClass", fields=("name", *body))
        r.required(top, "name", "")
        name = r.string(top, "name", "")
    r.required(top, "value", "")
    r.string(top, "description", "")
    pc = PriorityClass(
        name=name,
        value=r.integer(top, "value", "") or 0,
        global_default=r.boolean(top, "globalDefault", "", False),
        preemption_policy=r.choice(
            top, "preemptionPolicy", "", ("PreemptLowerPriority", "Never"), "PreemptLowerPriority"
        ),
    )
    r.raise_if_errors(source)
    raise_if_any(validate_priority_class(pc), source)
    return pc


def parse_kubeflow_job(doc: Mapping[str, Any], source: str = "") -> Job:
    """A `kubeflow.org/v1` TFJob, PyTorchJob, MPIJob or PaddleJob, as the Volcano Job it runs as (`core.kubeflow`)."""
    try:
        return parse_job(to_volcano(doc, source), source)
    except ValidationError as e:
        raise kubeflow_error(e, doc) from None


_PARSERS: dict[tuple[str, str], Callable[[Mapping[str, Any], str], ManifestObject]] = {
    (JOB_API, "Job"): parse_job,
    (SCHEDULING_API, "Queue"): parse_queue,
    (PRIORITY_CLASS_API, "PriorityClass"): parse_priority_class,
    **{(KUBEFLOW_API, kind): parse_kubeflow_job for kind in FRAMEWORKS},
}
