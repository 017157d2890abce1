"""Objects between the Kubernetes API's JSON and caldera's object model, both ways.

From the API: Nodes (allocatable with `nvidia.com/gpu`, labels, taints, unschedulable, Ready),
Queues, PriorityClasses and Volcano Jobs, read with the same parsers (and so the same defaults
and checks) as manifests given to the embedded cluster; what the API server added (uid,
resourceVersion, managedFields, status) is taken apart from what the user wrote. Pod facts
(phase, exit code) for the controller.

To the API: a Job's, PodGroup's and Queue's `status` in Volcano's shapes (times as RFC 3339),
so `kubectl get` and vcctl read them as they read Volcano's.

Invariant: pure functions of their arguments; a malformed object raises CalderaError (a
ValidationError naming the field), never anything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from caldera.core import objects as o
from caldera.core.errors import CalderaError, FieldError, ValidationError
from caldera.core.jobmanifest import parse_job
from caldera.core.manifest import parse_priority_class, parse_queue
from caldera.core.meta import ObjectMeta
from caldera.core.podspec import Taint
from caldera.core.resources import format_resource_list, parse_resource_list

JSON = dict[str, Any]
JOB_PODGROUP_LABEL = "caldera.dev/job-podgroup"  # on the PodGroups made for Jobs


# ---------------------------------------------------------------- time


def to_time(t: float | None) -> str | None:
    """Seconds since the epoch as Kubernetes writes a Time (RFC 3339, whole seconds, UTC)."""
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def to_micro_time(t: float) -> str:
    """A MicroTime (Leases, events.k8s.io): RFC 3339 with microseconds."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_time(text: object) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# ---------------------------------------------------------------- from the API


def user_manifest(obj: Mapping[str, Any]) -> JSON:
    """What the user wrote: apiVersion, kind, name, namespace, labels, annotations and spec (no status)."""
    meta = obj.get("metadata") or {}
    out: JSON = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if meta.get(k) is not None},
    }
    if "spec" in obj:
        out["spec"] = obj["spec"]
    return out


def job_from_api(obj: Mapping[str, Any]) -> o.Job:
    """A Volcano Job with Volcano's webhook defaults; ValidationError naming the field when it is invalid."""
    meta = obj.get("metadata") or {}
    source = f"job {meta.get('namespace', '')}/{meta.get('name', '')}"
    job = parse_job(user_manifest(obj), source)
    job.metadata.uid = str(meta.get("uid", ""))
    job.metadata.creation_timestamp = from_time(meta.get("creationTimestamp")) or 0.0
    job.metadata.generation = int(meta.get("generation") or 1)
    return job


def job_status_from_api(status: Mapping[str, Any]) -> o.JobStatus | None:
    """The status the controller wrote before (None if it never wrote one)."""
    state = status.get("state") or {}
    if not state.get("phase"):
        return None
    return o.JobStatus(
        phase=str(state["phase"]),
        reason=str(state.get("reason", "")),
        message=str(state.get("message", "")),
        last_transition_time=from_time(state.get("lastTransitionTime")) or 0.0,
        retry_count=int(status.get("retryCount") or 0),
        version=int(status.get("version") or 0),
        min_available=int(status.get("minAvailable") or 0),
        pending=int(status.get("pending") or 0),
        running=int(status.get("running") or 0),
        succeeded=int(status.get("succeeded") or 0),
        failed=int(status.get("failed") or 0),
        terminating=int(status.get("terminating") or 0),
        unknown=int(status.get("unknown") or 0),
        start_time=from_time((status.get("controlledResources") or {}).get("caldera.dev/start-time")),
        completion_time=from_time((status.get("controlledResources") or {}).get("caldera.dev/completion-time")),
        conditions=[
            (str(c.get("status", "")), from_time(c.get("lastTransitionTime")) or 0.0)
            for c in status.get("conditions") or []
        ],
    )


def queue_from_api(obj: Mapping[str, Any]) -> o.Queue:
    manifest = user_manifest(obj)
    manifest["metadata"].pop("namespace", None)
    spec = dict(manifest.get("spec") or {})
    # Fields of Volcano's Queue caldera has no use for are dropped, not refused: the API server accepted them.
    manifest["spec"] = {
        k: v for k, v in spec.items() if k not in ("affinity", "extendClusters", "type", "dequeueStrategy")
    }
    state = (obj.get("status") or {}).get("state")
    if state and "state" not in manifest["spec"]:
        manifest["status"] = {"state": state}
    return parse_queue(manifest, f"queue {(obj.get('metadata') or {}).get('name', '')}")


def priority_class_from_api(obj: Mapping[str, Any]) -> o.PriorityClass:
    doc = {k: obj[k] for k in ("apiVersion", "kind", "value", "globalDefault", "preemptionPolicy") if k in obj}
    doc["metadata"] = {"name": (obj.get("metadata") or {}).get("name", "")}
    return parse_priority_class(doc, f"priorityclass {doc['metadata']['name']}")


def node_from_api(obj: Mapping[str, Any], used: Mapping[str, float] | None = None) -> o.Node:
    """A Node as the scheduler sees it; `used` (what pods of other schedulers hold) is taken off its allocatable."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    name = str(meta.get("name", ""))
    try:
        allocatable = parse_resource_list(status.get("allocatable") or {})
    except CalderaError as e:
        raise ValidationError([FieldError("status.allocatable", str(e))], f"node {name}") from None
    for key, value in (used or {}).items():
        if key in allocatable:
            allocatable[key] = max(0.0, allocatable[key] - value)
    taints = tuple(
        Taint(key=str(t.get("key", "")), value=str(t.get("value", "")), effect=str(t.get("effect", "NoSchedule")))
        for t in spec.get("taints") or []
    )
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return o.Node(
        metadata=ObjectMeta(name=name, namespace="", labels=dict(meta.get("labels") or {})),
        allocatable=allocatable,
        taints=taints,
        unschedulable=bool(spec.get("unschedulable", False)),
        ready=ready,
    )


def pod_requests(pod: Mapping[str, Any]) -> dict[str, float]:
    """What a pod holds on its node: the sum of its containers' requests (limits where requests are absent)."""
    total: dict[str, float] = {}
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        asked = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        try:
            for key, value in parse_resource_list(asked).items():
                total[key] = total.get(key, 0.0) + value
        except CalderaError:
            continue
    return total


def pod_exit_code(pod: Mapping[str, Any]) -> int:
    """The first container's exit code as the kubelet reported it (1 for a failed pod that says none)."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated is not None and terminated.get("exitCode") is not None:
            return int(terminated["exitCode"])
    return 0 if (pod.get("status") or {}).get("phase") == o.POD_SUCCEEDED else 1


# ---------------------------------------------------------------- to the API


def job_status_to_api(status: o.JobStatus, task_counts: Mapping[str, Mapping[str, int]] | None = None) -> JSON:
    """Volcano's JobStatus; caldera's start and completion times ride in `controlledResources` (a string map)."""
    out: JSON = {
        "state": {
            "phase": status.phase,
            "reason": status.reason,
            "message": status.message,
            "lastTransitionTime": to_time(status.last_transition_time),
        },
        "minAvailable": status.min_available,
        "pending": status.pending,
        "running": status.running,
        "succeeded": status.succeeded,
        "failed": status.failed,
        "terminating": status.terminating,
        "unknown": status.unknown,
        "version": status.version,
        "retryCount": status.retry_count,
        "conditions": [{"status": p, "lastTransitionTime": to_time(t)} for p, t in status.conditions],
    }
    times = {
        "caldera.dev/start-time": to_time(status.start_time),
        "caldera.dev/completion-time": to_time(status.completion_time),
    }
    resources = {k: v for k, v in times.items() if v is not None}
    if resources:
        out["controlledResources"] = resources
    if task_counts:
        out["taskStatusCount"] = {task: {"phase": dict(counts)} for task, counts in task_counts.items()}
    return out


def podgroup_to_api(pg: o.PodGroup, job_uid: str = "", *, owners: list[JSON] | None = None) -> JSON:
    """A new PodGroup, owned by its Job (deleted with it) and labelled as a Job's (the controller's watch of other
    operators' PodGroups leaves these out); or, for another operator's pod, owned by `owners`."""
    labels = dict(pg.metadata.labels)
    if owners is None:
        owners = [owner_reference(pg.job, job_uid)]
        labels[JOB_PODGROUP_LABEL] = "true"
    return {
        "apiVersion": o.SCHEDULING_API,
        "kind": "PodGroup",
        "metadata": {
            "name": pg.metadata.name,
            "namespace": pg.metadata.namespace,
            "labels": labels,
            "annotations": dict(pg.metadata.annotations),
            "ownerReferences": owners,
        },
        "spec": {
            "minMember": pg.min_member,
            "minTaskMember": dict(pg.min_task_member),
            "queue": pg.queue,
            "priorityClassName": pg.priority_class_name,
            "minResources": format_resource_list(pg.min_resources),
        },
    }


def podgroup_status_to_api(pg: o.PodGroup) -> JSON:
    return {
        "phase": pg.phase,
        "conditions": [
            {
                "type": c.type,
                "status": c.status,
                "reason": c.reason,
                "message": c.message,
                "lastTransitionTime": to_time(c.last_transition_time),
            }
            for c in pg.conditions
        ],
        "running": pg.running,
        "succeeded": pg.succeeded,
        "failed": pg.failed,
    }


def owner_reference(job: str, uid: str) -> JSON:
    return {
        "apiVersion": o.JOB_API,
        "kind": "Job",
        "name": job,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
