"""The daemon's summaries (`caldera.system.api`'s module docstring) computed from Kubernetes objects.

So that `caldera list`, `get`, `describe` and `top` print the same against a cluster as against the
embedded one, a job summary is built from the Job (Volcano's status: `state.phase`, `retryCount`, …),
its pods (found by the `volcano.sh/job-name` label) and its PodGroup (an `Unschedulable` condition is
the "waiting" reason); a node summary from the Node and the pods bound to it (their requests; pods
that ended hold nothing); an event summary from a core Event. Pure functions of plain dicts: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from caldera.core import objects as o
from caldera.core.jobkind import applied_as, job_type
from caldera.core.objects import JOB_NAME_KEY, TASK_INDEX_KEY, TASK_SPEC_KEY
from caldera.core.quantity import QuantityError
from caldera.core.resources import GPU, add, format_resource_list, parse_resource_list

JSON = dict[str, Any]
FINISHED_POD_PHASES = ("Succeeded", "Failed")
# Where caldera's controller writes a job's start and completion times: Volcano's JobStatus has no field
# for them, but a string map (`controlledResources`) that Volcano's own CRD keeps too.
START_TIME = "caldera.dev/start-time"
COMPLETION_TIME = "caldera.dev/completion-time"


def _meta(obj: Mapping[str, Any]) -> JSON:
    return dict(obj.get("metadata") or {})


def _int(value: object, default: int = 0) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return default


# ---------------------------------------------------------------- jobs


def min_available(job: Mapping[str, Any]) -> int:
    """The job's gang size as Volcano's webhook defaults it: its minAvailable, else the tasks' (minAvailable or replicas)."""
    spec = job.get("spec") or {}
    given = _int(spec.get("minAvailable"))
    if given:
        return given
    tasks = spec.get("tasks") or []
    return sum(_int(t.get("minAvailable"), _int(t.get("replicas"))) for t in tasks)


def pod_summary(pod: Mapping[str, Any]) -> JSON:
    meta, spec, status = _meta(pod), pod.get("spec") or {}, pod.get("status") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    phase = str(status.get("phase") or "Pending")
    if meta.get("deletionTimestamp") and phase not in FINISHED_POD_PHASES:
        phase = "Terminating"
    statuses = status.get("containerStatuses") or []
    exit_code = None
    for c in statuses:
        terminated = (c.get("state") or {}).get("terminated")
        if terminated is not None:
            exit_code = terminated.get("exitCode")
            break
    address = status.get("podIP") or None
    if spec.get("hostname") and spec.get("subdomain"):
        address = f"{spec['hostname']}.{spec['subdomain']}"  # the svc plugin's DNS name
    index = labels.get(TASK_INDEX_KEY) or annotations.get(TASK_INDEX_KEY)
    return {
        "name": meta.get("name"),
        "task": labels.get(TASK_SPEC_KEY) or annotations.get(TASK_SPEC_KEY),
        "index": _int(index),
        "node": spec.get("nodeName") or None,
        "phase": phase,
        "exitCode": exit_code,
        "restarts": sum(_int(c.get("restartCount")) for c in statuses),
        "address": address,
        "reason": status.get("reason") or "",
        "message": status.get("message") or "",
    }


def waiting(podgroup: Mapping[str, Any] | None) -> JSON | None:
    """Why the job is held up, from its PodGroup's Unschedulable condition (None when nothing holds it)."""
    status = (podgroup or {}).get("status") or {}
    if status.get("phase") in ("Running", "Completed"):
        return None
    for c in status.get("conditions") or []:
        if c.get("type") == "Unschedulable" and c.get("status") == "True":
            return {
                "reason": "Unschedulable",
                "message": str(c.get("message") or c.get("reason") or ""),
                "never": False,
            }
    return None


def job_summary(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], podgroup: Mapping[str, Any] | None) -> JSON:
    """The summary `get`, `list` and `top job` print: see `caldera.system.api`."""
    meta, spec, status = _meta(job), job.get("spec") or {}, job.get("status") or {}
    state = status.get("state") or {}
    times = status.get("controlledResources") or {}
    order = {str(t.get("name")): i for i, t in enumerate(spec.get("tasks") or [])}
    summaries = sorted(
        (pod_summary(p) for p in pods), key=lambda p: (order.get(str(p["task"]), 99), p["index"], str(p["name"]))
    )
    api_version, kind = applied_as(meta.get("annotations"))
    return {
        "name": meta.get("name"),
        "namespace": meta.get("namespace") or "default",
        "apiVersion": api_version,
        "kind": kind,
        "type": job_type(meta.get("labels")),
        "labels": dict(meta.get("labels") or {}),
        "queue": spec.get("queue") or "default",
        "phase": state.get("phase") or "Pending",
        "retryCount": _int(status.get("retryCount")),
        "minAvailable": min_available(job),
        "creationTimestamp": meta.get("creationTimestamp"),
        "startTime": times.get(START_TIME) or status.get("startTime"),
        "completionTime": times.get(COMPLETION_TIME) or status.get("completionTime"),
        "reason": state.get("reason") or "",
        "message": state.get("message") or "",
        "waiting": waiting(podgroup),
        "pods": summaries,
        "tensorboard": None,
    }


def job_of(pod: Mapping[str, Any]) -> str | None:
    return (_meta(pod).get("labels") or {}).get(JOB_NAME_KEY)


# ---------------------------------------------------------------- nodes


def pod_requests(pod: Mapping[str, Any]) -> dict[str, float]:
    """What a pod holds on its node: its containers' requests (a limit stands for a missing request)."""
    total: dict[str, float] = {}
    for c in (pod.get("spec") or {}).get("containers") or []:
        resources = c.get("resources") or {}
        wanted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        try:
            total = add(total, parse_resource_list(wanted))
        except QuantityError:
            continue  # the API server accepted it, so Kubernetes reads it; not worth failing `top` over
    return total


def node_summaries(nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]) -> list[JSON]:
    """Every node's summary (`top node`), from one pass over the pods bound to nodes and not ended."""
    held: dict[str, tuple[int, dict[str, float]]] = {}
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if not node or (p.get("status") or {}).get("phase") in FINISHED_POD_PHASES:
            continue
        count, used = held.get(node, (0, {}))
        held[node] = (count + 1, add(used, pod_requests(p)))
    return [_node_summary(n, *held.get(str(_meta(n).get("name")), (0, {}))) for n in nodes]


def _node_summary(node: Mapping[str, Any], pods: int, allocated: dict[str, float]) -> JSON:
    meta, spec, status = _meta(node), node.get("spec") or {}, node.get("status") or {}
    try:
        allocatable = parse_resource_list(status.get("allocatable") or {})
    except QuantityError:
        allocatable = {}
    return {
        "name": meta.get("name"),
        "labels": dict(meta.get("labels") or {}),
        "taints": [
            {"key": t.get("key"), "value": t.get("value") or "", "effect": t.get("effect")}
            for t in spec.get("taints") or []
        ],
        "allocatable": format_resource_list(allocatable),
        "allocated": format_resource_list({k: v for k, v in allocated.items() if k in allocatable}),
        "gpus": int(allocatable.get(GPU, 0.0) / 1000),
        "gpusUsed": int(allocated.get(GPU, 0.0) / 1000),
        "virtualGpus": False,
        "pods": pods,
    }


# ---------------------------------------------------------------- events


def event_summary(event: Mapping[str, Any]) -> JSON:
    """A core Event as `describe` lists one: {"time", "kind", "object", "node", "reason", "message"}."""
    involved = event.get("involvedObject") or {}
    when = event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
    when = when or _meta(event).get("creationTimestamp")
    source = event.get("source") or {}
    return {
        "time": when,
        "kind": involved.get("kind") or "",
        "object": involved.get("name") or "",
        "node": source.get("host") or "",
        "reason": event.get("reason") or "",
        "message": event.get("message") or "",
    }


# ------------------------------------------------------------ objects as the CLI shows them


def podgroup_job(group: JSON) -> str:
    """The job a PodGroup belongs to: its controller owner's name (Volcano names it `<job>-<uid>`)."""
    for ref in (group.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("kind") == "Job":
            return str(ref.get("name"))
    return ""


def about(event: JSON, objects: set[str]) -> bool:
    return str((event.get("involvedObject") or {}).get("name")) in objects


def shown(obj: JSON) -> JSON:
    """A watched object as the CLI's rows read it: a pod's exit code and restarts at the top of its status."""
    obj = plain(obj)
    if obj.get("kind") != "Pod":
        return obj
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    exit_code = next(
        (t["exitCode"] for c in statuses if (t := (c.get("state") or {}).get("terminated")) is not None), None
    )
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    return {**obj, "status": {**(obj.get("status") or {}), "exitCode": exit_code, "restartCount": restarts}}


def plain(obj: JSON) -> JSON:
    """An object as `kubectl get -o yaml` shows it: without the server-side apply bookkeeping (managedFields)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def queue_shown(queue: JSON) -> JSON:
    """A queue whose controller has not written its state yet is Open (as caldera and Volcano read it)."""
    queue = plain(queue)
    status = queue.get("status") or {}
    return queue if status.get("state") else {**queue, "status": {**status, "state": o.QUEUE_OPEN}}
