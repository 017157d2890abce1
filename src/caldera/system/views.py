"""What people and programs see of a job and a node: the stable JSON of `get`, `list`, `top` and `-o json`.

A job's summary has at least {"name", "namespace", "queue", "phase", "retryCount",
"minAvailable", "pods": [{"name", "task", "node", "phase", "exitCode", "restarts",
"address", "reason", "message"}], "waiting"} (the contract of `system/api.py`); a pod being
deleted shows as Terminating; the pods that ended and were removed are listed too, as they
ended; "waiting" says why the job is held up (`waiting.py`).
"labels", "type" and the "apiVersion" and "kind" it was applied as (`core.jobkind`) say
what the job is, for selectors, `list`'s TYPE column and `-o name`.
"""

from __future__ import annotations

from collections.abc import Iterable

from caldera.core import objects as o
from caldera.core.jobkind import applied_as, job_type
from caldera.core.resources import GPU, format_resource_list
from caldera.system.api import JSON
from caldera.system.control import ControlPlane
from caldera.system.runtime import LocalRuntime
from caldera.system.waiting import waiting


def job_summary(
    plane: ControlPlane, runtime: LocalRuntime, job: o.Job, ended: list[o.Pod], tensorboard: str | None
) -> JSON:
    """`ended`: the job's pods that were removed after they ran (no live pod has their names)."""
    order = {t.name: i for i, t in enumerate(job.spec.tasks)}
    live = list(plane.job_pods.get(job.key, {}).values())
    pods = sorted([*live, *ended], key=lambda p: (order.get(p.task, 99), p.index))
    api_version, kind = applied_as(job.metadata.annotations)
    return {
        "name": job.name,
        "namespace": job.namespace,
        "apiVersion": api_version,
        "kind": kind,
        "type": job_type(job.metadata.labels),
        "labels": dict(job.metadata.labels),
        "queue": job.spec.queue,
        "phase": job.status.phase,
        "retryCount": job.status.retry_count,
        "minAvailable": job.spec.min_available,
        "creationTimestamp": job.metadata.creation_timestamp,
        "startTime": job.status.start_time,
        "completionTime": job.status.completion_time,
        "reason": job.status.reason,
        "message": job.status.message,
        "waiting": waiting(plane, job),
        "pods": [
            {
                "name": p.name,
                "task": p.task,
                "index": p.index,
                "node": p.node_name,
                "phase": "Terminating" if p.deletion_timestamp is not None and not p.finished else p.status.phase,
                "exitCode": p.status.exit_code,
                "restarts": p.status.restart_count,
                "address": runtime.address(job, p.name),
                "reason": p.status.reason,
                "message": p.status.message,
            }
            for p in pods
        ],
        "tensorboard": tensorboard,
    }


def node_summaries(plane: ControlPlane, pods: Iterable[o.Pod] | None = None) -> list[JSON]:
    """Every node's summary, in the plane's order, from one pass over `pods` (default: all the plane's;
    `holding_pods` gives those that can hold a node, for a pass that does not grow with finished pods)."""
    held: dict[str, tuple[list[o.Pod], dict[str, float]]] = {name: ([], {}) for name in plane.nodes}
    for p in plane.pods.values() if pods is None else pods:
        on = held.get(p.node_name)
        if on is None or p.finished:
            continue
        on[0].append(p)
        for k, v in p.spec.requests().items():
            on[1][k] = on[1].get(k, 0.0) + v
    return [_node_summary(node, *held[node.name]) for node in plane.nodes.values()]


def holding_pods(plane: ControlPlane) -> list[o.Pod]:
    """The pods that may hold a node: a run in progress (bound, started, stopping) or a restart in place
    waiting out its back-off. A pod bound and not finished is one of them (CALDERA_VERIFY_STORE checks
    the summaries from these against a pass over every pod after each write)."""
    pods = plane.pods
    keys = plane.running.keys() | plane.backoff.waiting.keys()
    return [pods[key] for key in keys if key in pods]


def _node_summary(node: o.Node, pods: list[o.Pod], allocated: dict[str, float]) -> JSON:
    return {
        "name": node.name,
        "labels": dict(node.labels),
        "taints": [t.to_dict() for t in node.taints],
        "allocatable": format_resource_list(node.allocatable),
        "allocated": format_resource_list({k: v for k, v in allocated.items() if k in node.allocatable}),
        "gpus": int(node.allocatable.get(GPU, 0.0) / 1000),
        "gpusUsed": int(allocated.get(GPU, 0.0) / 1000),
        "virtualGpus": GPU in node.virtual_resources,
        "pods": len(pods),
    }
