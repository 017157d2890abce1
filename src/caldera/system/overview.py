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
allocations (?node=NAME: only that node; ?podsUpTo=N: a node's pods listed only if it has at most N,
else only those holding GPUs, so a page of many nodes full of pods gets what it draws first):
  {"resourceVersion", "time",
   "items": [{"name", "ready", "virtualGpus", "gpus", "gpuIds", "allocatable", "allocated", "podCount",
              "podsListed": "all" | "gpu",
              "pods": [{"namespace", "name", "job", "task", "phase", "requests", "gpus": [ids]}]}]}
jobtable:
  {"resourceVersion", "time", "items": [Jobs with metadata {name, namespace, creationTimestamp},
   spec {queue, minAvailable, tasks [{name, replicas}]}, status {state {phase}, running, retryCount,
   startTime, completionTime}: those fields as the full object has them]}

A pod holds its node's resources from its bind until it is gone (a terminating pod still holds
them): the allocated amounts are the scheduler's own count (its node arrays: the sum of the
requests of the pods that occupy each node), read, not summed again pod by pod. Invariant: both views are computed in one pass over the
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
    allocated: Mapping[str, float],
) -> JSON:
    """`allocated`: what the pods on nodes hold, as the scheduler counts it (see the module)."""
    capacity: dict[str, float] = {}
    for node in nodes.values():
        if node.ready:
            _add(capacity, node.allocatable)
    pod_phases: Counter[str] = Counter()
    for p in pods.values():  # ten thousand pods are most of the work: nothing but their phase
        pod_phases[p.status.phase if p.deletion_timestamp is None or p.finished else "Terminating"] += 1
    by_queue: dict[str, Counter[str]] = {}
    job_phases: Counter[str] = Counter()
    for j in jobs.values():
        by_queue.setdefault(j.spec.queue, Counter())[j.status.phase] += 1
        job_phases[j.status.phase] += 1
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
        "jobs": dict(sorted(job_phases.items())),
        "pods": dict(sorted(pod_phases.items())),
        "events": events,
    }


def allocations(
    nodes: Mapping[str, o.Node],
    pods: Mapping[str, o.Pod],
    gpus: Mapping[str, tuple[str, list[int]]],
    allocated: Callable[[str], dict[str, float]],
    *,
    node: str | None = None,
    pods_up_to: int | None = None,
) -> list[JSON]:
    """Per node (or only `node`): what it has, what is allocated and how many pods occupy it
    (`allocated(node)`: the scheduler's count, the pods as PODS), and the pods on it with the GPUs each
    holds (`gpus`: pod key → node, ids). A node of more than `pods_up_to` pods lists only its GPU holders;
    when every node is such a node, the pods are not gone through at all."""
    names = [name for name in nodes if node in (None, name)]
    held = {name: allocated(name) for name in names}
    counts = {name: int(held[name].get(PODS, 0.0)) for name in names}
    every = {name: pods_up_to is None or counts[name] <= pods_up_to for name in names}
    on: dict[str, list[o.Pod]] = {name: [] for name in names if every[name] and counts[name]}
    if on:
        for p in pods.values():
            placed = on.get(p.node_name)
            if placed is not None and not p.finished:
                placed.append(p)
    for key, (name, ids) in gpus.items():
        holder = pods.get(key) if ids and name in counts and not every[name] else None
        if holder is not None and holder.node_name == name and not holder.finished:
            on.setdefault(name, []).append(holder)
    items = []
    for name in sorted(names, key=_node_order):
        n = nodes[name]
        count = int(n.allocatable.get(GPU, 0.0) / 1000)
        offset = int(n.labels.get(GPU_OFFSET_LABEL, "0") or 0)  # a node's GPUs are ids offset … offset+gpus-1
        listed = sorted(on.get(name, []), key=lambda p: (p.namespace, p.name))
        items.append(
            {
                "name": name,
                "ready": n.ready,
                "virtualGpus": GPU in n.virtual_resources,
                "gpus": count,
                "gpuIds": list(range(offset, offset + count)),
                "allocatable": _formatted(tuple(n.allocatable.items())),
                "allocated": _formatted(
                    tuple((k, v) for k, v in held[name].items() if k in n.allocatable and k != PODS)
                ),
                "podCount": counts[name],
                "podsListed": "all" if every[name] else "gpu",
                "pods": [
                    {
                        "namespace": p.namespace,
                        "name": p.name,
                        "job": p.job,
                        "task": p.task,
                        "phase": _pod_phase(p),
                        "requests": _quantities(p.spec.requests()),
                        "gpus": list(gpus.get(p.key, ("", []))[1]),
                    }
                    for p in listed
                ],
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
def _formatting(amounts: tuple[tuple[str, float], ...]) -> dict[str, str]:
    return format_resource_list({k: v for k, v in amounts if v > 0})


def _formatted(amounts: tuple[tuple[str, float], ...]) -> dict[str, str]:
    """Amounts as quantities: nodes and pods mostly have the same few, so each is formatted once."""
    return dict(_formatting(amounts))


def _quantities(requests: Mapping[str, float]) -> dict[str, str]:
    """A pod's requests as quantities (those it asks for)."""
    return _formatted(tuple(requests.items()))


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
