"""Other operators' PodGroups and pods read into caldera's objects, as Volcano's scheduler reads them.

- Which pods: those naming caldera's `schedulerName` that no Volcano Job owns (caldera's own pods are its
  Jobs'); their group is the PodGroup named by `scheduling.k8s.io/group-name` (or Volcano's
  `scheduling.volcano.sh/group-name`), else one made for them as Volcano's PodGroup controller makes it,
  `podgroup-<uid of the pod's controller>` (shared by its pods) else `podgroup-<pod uid>`: minMember 1, the queue of the pod's `scheduling.volcano.sh/queue-name` (or
  `volcano.sh/queue-name`) annotation, else `default`, the pod's PriorityClass and requests, owned by the
  pod's controller, else by the pod (so it goes with them).
- Which PodGroups: those no Volcano Job owns. Their spec (minMember, minTaskMember, queue,
  priorityClassName, minResources) is read with Volcano's defaults; their phase is the scheduler's.
- A pod's task is its `volcano.sh/task-spec` annotation (what minTaskMember counts); its spec is read by the
  same parser as a Job's pod templates, so its requests, selectors, affinity and tolerations mean the same.

Invariant: pure functions of their arguments; a malformed object raises CalderaError naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from caldera.backends.kube.convert import JOB_PODGROUP_LABEL, from_time, pod_requests
from caldera.core import objects as o
from caldera.core.errors import FieldError, ValidationError
from caldera.core.meta import ObjectMeta
from caldera.core.podtemplate import parse_pod_template
from caldera.core.quantity import QuantityError
from caldera.core.resources import parse_resource_list
from caldera.core.schema import FieldReader

JSON = dict[str, Any]
GROUP_ANNOTATIONS = (o.GROUP_NAME_KEY, "scheduling.volcano.sh/group-name")
QUEUE_ANNOTATIONS = ("scheduling.volcano.sh/queue-name", o.QUEUE_NAME_KEY)
OPERATOR_PODGROUPS = f"!{JOB_PODGROUP_LABEL}"  # the label selector of the watch of other operators' PodGroups
JOB_PREFIX = "podgroup:"  # the plane's job name for another operator's group: ":" is in no object's name


def owned_by_volcano_job(obj: Mapping[str, Any]) -> bool:
    """A Volcano Job owns it: a pod or PodGroup of caldera's own jobs (or of Volcano's, on its way out)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch.volcano.sh/"):
            return True
    return False


def group_name(pod: Mapping[str, Any]) -> str:
    """The PodGroup a pod names, or the one made for it, as Volcano names it: `podgroup-<uid of its controller>`
    (one group for a ReplicaSet's, a StatefulSet's pods), else `podgroup-<uid of the pod>`."""
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    for key in GROUP_ANNOTATIONS:
        if annotations.get(key):
            return str(annotations[key])
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") and ref.get("uid"):
            return f"podgroup-{ref['uid']}"
    return f"podgroup-{meta.get('uid', '')}"


def names_group(pod: Mapping[str, Any]) -> bool:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return any(annotations.get(key) for key in GROUP_ANNOTATIONS)


def podgroup_from_api(obj: Mapping[str, Any]) -> o.PodGroup:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    name, ns = str(meta.get("name", "")), str(meta.get("namespace") or "default")
    source = f"podgroup {ns}/{name}"
    min_member = spec.get("minMember", 1)
    if not isinstance(min_member, int) or isinstance(min_member, bool) or min_member < 0:
        raise ValidationError([FieldError("spec.minMember", "must be an integer >= 0")], source)
    task_members = spec.get("minTaskMember") or {}
    if not isinstance(task_members, Mapping) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in task_members.values()
    ):
        raise ValidationError([FieldError("spec.minTaskMember", "must map task names to integers >= 0")], source)
    raw_resources = spec.get("minResources") or {}
    if not isinstance(raw_resources, Mapping):
        raise ValidationError([FieldError("spec.minResources", "must be a resource list")], source)
    try:
        min_resources = parse_resource_list(raw_resources)
    except QuantityError as e:
        raise ValidationError([FieldError("spec.minResources", str(e))], source) from e
    return o.PodGroup(
        metadata=ObjectMeta(
            name=name,
            namespace=ns,
            uid=str(meta.get("uid", "")),
            creation_timestamp=from_time(meta.get("creationTimestamp")) or 0.0,
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
        ),
        job=JOB_PREFIX + name,
        min_member=min_member,
        queue=str(spec.get("queue") or "default"),
        priority_class_name=str(spec.get("priorityClassName") or ""),
        min_task_member={str(k): int(v) for k, v in task_members.items()},
        min_resources=min_resources,
    )


def implicit_podgroup(pod: Mapping[str, Any]) -> tuple[o.PodGroup, list[JSON]]:
    """The group made for a pod that names none, and the ownerReferences it is written with."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    annotations = meta.get("annotations") or {}
    queue = next((str(annotations[k]) for k in QUEUE_ANNOTATIONS if annotations.get(k)), "default")
    name = group_name(pod)
    owners = [dict(ref) for ref in meta.get("ownerReferences") or [] if ref.get("controller")]
    if not owners:
        owners = [{"apiVersion": "v1", "kind": "Pod", "name": meta.get("name"), "uid": meta.get("uid")}]
    pg = o.PodGroup(
        metadata=ObjectMeta(
            name=name,
            namespace=str(meta.get("namespace") or "default"),
            # The pod's: a group's wait (las's levels and its bound on waiting) counts from it.
            creation_timestamp=from_time(meta.get("creationTimestamp")) or 0.0,
        ),
        job=JOB_PREFIX + name,
        min_member=1,
        queue=queue,
        priority_class_name=str(spec.get("priorityClassName") or ""),
        min_resources=pod_requests(pod),
    )
    return pg, owners


def pod_from_api(obj: Mapping[str, Any], priority_of: Callable[[str], int]) -> o.Pod:
    """Another operator's pod; `priority_of(class name)` resolves a PriorityClass when the pod carries no priority."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    name, ns = str(meta.get("name", "")), str(meta.get("namespace") or "default")
    r = FieldReader()
    template = parse_pod_template(r, {"metadata": {}, "spec": spec}, "")
    if r.errors:
        raise ValidationError(r.errors, f"pod {ns}/{name}")
    node = str(spec.get("nodeName") or "")
    phase = str((obj.get("status") or {}).get("phase") or o.POD_PENDING)
    if node and phase == o.POD_PENDING:
        phase = o.POD_RUNNING  # bound: the plane's pods run from their binding on
    priority = spec.get("priority")
    annotations = dict(meta.get("annotations") or {})
    created = from_time(meta.get("creationTimestamp")) or 0.0
    return o.Pod(
        metadata=ObjectMeta(
            name=name,
            namespace=ns,
            uid=str(meta.get("uid", "")),
            creation_timestamp=created,
            labels=dict(meta.get("labels") or {}),
            annotations=annotations,
        ),
        spec=template.spec,
        job=JOB_PREFIX + group_name(obj),
        task=annotations.get(o.TASK_SPEC_KEY, ""),
        node_name=node,
        priority=priority if isinstance(priority, int) else priority_of(template.spec.priority_class_name),
        deletion_timestamp=from_time(meta.get("deletionTimestamp")),
        status=o.PodStatus(
            phase=phase, start_time=from_time((obj.get("status") or {}).get("startTime")) or (created if node else None)
        ),
    )
