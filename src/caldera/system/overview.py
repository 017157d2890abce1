"""What the cluster holds at a glance (`GET /api/v1/overview`), what each node gives to which pod
(`GET /api/v1/allocations`) and the jobs as a table reads them (`GET /api/v1/jobtable`): the
dashboard's overview, nodes and jobs pages, for any client.

overview:
  {"resourceVersion", "time",
   "nodes": {"total", "ready"},
   "resources": [{"name", "capacity", "allocated"}]       GPUs, CPUs, memory first, quantities as text
   "queues": [{"name", "state", "weight", "deserved", "allocated", "requested", "jobs": {phase: n}}],
   "jobs": {phase: n}, "pods": {phase: n},
   "events": [the last RECENT_EVENTS events, oldest first, as /api/v1/events gives them]}
allocations:
  {"resourceVersion", "time",
   "items": [{"name", "ready", "virtualGpus", "gpus", "gpuIds", "allocatable", "allocated",
              "pods": [{"namespace", "name", "job", "task", "phase", "requests", "gpus": [ids]}]}]}
jobtable:
  {"resourceVersion", "time", "items": [Jobs with metadata {name, namespace, creationTimestamp},
   spec {queue, minAvailable, tasks [{name, replicas}]}, status {state {phase}, running, retryCount,
   startTime, completionTime}: those fields as the full object has them]}

A pod holds its node's resources from its bind until it is gone (a terminating pod still holds
them), as the scheduler counts them. Invariant: both views are computed in one pass over the
pods, on the control loop, so every number in one answer is of the same moment; the
`resourceVersion` is the store's version read before that moment, so a client that watches
from it misses no change after the view (it may see one the view already has).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Mapping

from caldera.core import objects as o
from caldera.core.resources import CPU, GPU, MEMORY, PODS, format_resource_list
from caldera.scheduler.shares import QueueShare
from caldera.system.api import JSON
from caldera.system.machine import GPU_OFFSET_LABEL

RECENT_EVENTS = 20
FIRST_RESOURCES = (GPU, CPU, MEMORY)  # the order people read them in; others follow by name


def overview(
    nodes: Mapping[str, o.Node],
    pods: Mapping[str, o.Pod],
    jobs: Mapping[str, o.Job],
    queues: Mapping[str, o.Queue],
    shares: Mapping[str, QueueShare],
    events: list[JSON],
) -> JSON:
    capacity: dict[str, float] = {}
    for node in nodes.values():
        if node.ready:
            _add(capacity, node.allocatable)
    allocated: dict[str, float] = {}
    for p in pods.values():
        if p.node_name and not p.finished:
            _add(allocated, p.spec.requests())
    by_queue: dict[str, Counter[str]] = {}
    for j in jobs.values():
        by_queue.setdefault(j.spec.queue, Counter())[j.status.phase] += 1
    resources = [
        {
            "name": name,
            "capacity": _qty(name, capacity.get(name, 0.0)),
            "allocated": _qty(name, allocated.get(name, 0.0)),
        }
        for name in _ordered((capacity.keys() | allocated.keys()) - {PODS})  # a pod count is not a share
    ]
    return {
        "nodes": {"total": len(nodes), "ready": sum(1 for n in nodes.values() if n.ready)},
        "resources": resources,
        "queues": [_queue(q, shares.get(q.name), by_queue.get(q.name, Counter())) for q in _by_name(queues)],
        "jobs": dict(sorted(Counter(j.status.phase for j in jobs.values()).items())),
        "pods": dict(sorted(Counter(_pod_phase(p) for p in pods.values()).items())),
        "events": events,
    }


def allocations(
    nodes: Mapping[str, o.Node], pods: Mapping[str, o.Pod], gpus_of: Callable[[str], list[int]]
) -> list[JSON]:
    on: dict[str, list[o.Pod]] = {name: [] for name in nodes}
    for p in pods.values():
        if p.node_name in on and not p.finished:
            on[p.node_name].append(p)
    items = []
    for name in sorted(nodes, key=_node_order):
        node = nodes[name]
        gpus = int(node.allocatable.get(GPU, 0.0) / 1000)
        offset = int(node.labels.get(GPU_OFFSET_LABEL, "0") or 0)  # a node's GPUs are ids offset … offset+gpus-1
        held: dict[str, float] = {}
        listed = []
        for p in sorted(on[name], key=lambda p: (p.namespace, p.name)):
            requests = p.spec.requests()
            _add(held, requests)
            listed.append(
                {
                    "namespace": p.namespace,
                    "name": p.name,
                    "job": p.job,
                    "task": p.task,
                    "phase": _pod_phase(p),
                    "requests": _quantities(requests),
                    "gpus": gpus_of(p.key),
                }
            )
        items.append(
            {
                "name": name,
                "ready": node.ready,
                "virtualGpus": GPU in node.virtual_resources,
                "gpus": gpus,
                "gpuIds": list(range(offset, offset + gpus)),
                "allocatable": format_resource_list(node.allocatable),
                "allocated": format_resource_list({k: v for k, v in held.items() if k in node.allocatable}),
                "pods": listed,
            }
        )
    return items


def job_table(jobs: Mapping[str, o.Job]) -> list[JSON]:
    """Every job as a Job object with only the fields a table of jobs shows (as `caldera list -w` reads
    them), by namespace and name: a client derives its rows from these and from the full Jobs the
    watch sends alike."""
    return [
        {
            "kind": "Job",
            "metadata": {"name": j.name, "namespace": j.namespace, "creationTimestamp": j.metadata.creation_timestamp},
            "spec": {
                "queue": j.spec.queue,
                "minAvailable": j.spec.min_available,
                "tasks": [{"name": t.name, "replicas": t.replicas} for t in j.spec.tasks],
            },
            "status": {
                "state": {"phase": j.status.phase},
                "running": j.status.running,
                "retryCount": j.status.retry_count,
                "startTime": j.status.start_time,
                "completionTime": j.status.completion_time,
            },
        }
        for j in sorted(jobs.values(), key=lambda j: (j.namespace, j.name))
    ]


def _queue(q: o.Queue, share: QueueShare | None, jobs: Counter[str]) -> JSON:
    share = share or QueueShare({}, {}, {})
    return {
        "name": q.name,
        "state": q.state,
        "weight": q.spec.weight,
        "capability": format_resource_list(q.spec.capability),
        "deserved": format_resource_list(share.deserved),
        "allocated": format_resource_list(share.allocated),
        "requested": format_resource_list(share.requested),
        "jobs": dict(sorted(jobs.items())),
    }


@functools.lru_cache(maxsize=1024)
def _formatted(amounts: tuple[tuple[str, float], ...]) -> dict[str, str]:
    return format_resource_list(dict(amounts))


def _quantities(requests: Mapping[str, float]) -> dict[str, str]:
    """A pod's requests as quantities; pods mostly ask for the same few things, so each is formatted once."""
    return dict(_formatted(tuple(sorted((k, v) for k, v in requests.items() if v > 0))))


def _pod_phase(p: o.Pod) -> str:
    """As `get` shows it: a pod being deleted is Terminating."""
    return "Terminating" if p.deletion_timestamp is not None and not p.finished else p.status.phase


def _add(total: dict[str, float], amounts: Mapping[str, float]) -> None:
    for k, v in amounts.items():
        total[k] = total.get(k, 0.0) + v


def _qty(name: str, value: float) -> str:
    return "0" if value == 0 else format_resource_list({name: value})[name]  # not "0m"


def _ordered(names: set[str]) -> list[str]:
    return [n for n in FIRST_RESOURCES if n in names] + sorted(names - set(FIRST_RESOURCES))


def _by_name(queues: Mapping[str, o.Queue]) -> list[o.Queue]:
    return sorted(queues.values(), key=lambda q: (q.name != "default", q.name))


def _node_order(name: str) -> tuple[str, int]:
    """node-2 before node-10."""
    stem, _, number = name.rpartition("-")
    return (stem, int(number)) if number.isdigit() else (name, -1)
