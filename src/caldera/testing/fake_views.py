"""The dashboard's views as `FakeCluster` answers them: from its nodes and jobs, with no scheduler (no shares).

Each function reads the fake's plain data (its caller holds the fake's lock) and returns
what the daemon's view of the same name returns, in the same shape.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING

from caldera.core import objects as o
from caldera.core.resources import from_units, parse_resource_list
from caldera.system.api import JSON

if TYPE_CHECKING:
    from caldera.testing.fake_records import FakeJob


def overview(
    nodes: list[JSON],
    jobs: Mapping[tuple[str, str], FakeJob],
    queues: Mapping[str, JSON],
    events: list[JSON],
    now: float,
) -> JSON:
    capacity: dict[str, float] = {}
    allocated: dict[str, float] = {}
    for n in nodes:
        for name, qty in n["allocatable"].items():
            capacity[name] = capacity.get(name, 0.0) + parse_resource_list({name: qty})[name]
        for name, qty in n["allocated"].items():
            allocated[name] = allocated.get(name, 0.0) + parse_resource_list({name: qty})[name]
    every = list(jobs.values())
    queue_rows = [
        {
            "name": name,
            "state": q["status"]["state"],
            "weight": q["spec"].get("weight", 1),
            "capability": q["spec"].get("capability", {}),
            "deserved": {},
            "allocated": {},
            "requested": {},
            "jobs": dict(Counter(j.phase for j in every if j.queue == name)),
        }
        for name, q in sorted(queues.items())
    ]
    resources = [
        {
            "name": r,
            "capacity": from_units(r, capacity[r]),
            "allocated": from_units(r, allocated[r]) if allocated.get(r) else "0",
        }
        for r in sorted(capacity)
        if r != "pods"
    ]
    return {
        "resourceVersion": len(events),
        "time": now,
        "nodes": {"total": len(nodes), "ready": len(nodes)},
        "resources": resources,
        "queues": queue_rows,
        "jobs": dict(Counter(j.phase for j in every)),
        "pods": dict(Counter(p.phase for j in every for p in j.pods.values())),
        "events": events[-20:],
    }


def allocations(
    nodes: list[JSON], jobs: Mapping[tuple[str, str], FakeJob], node: str | None, pods_up_to: int | None
) -> list[JSON]:
    items = []
    for n in nodes:
        if node not in (None, n["name"]):
            continue
        pods: list[JSON] = [
            {"namespace": j.namespace, "name": p.name, "job": j.name, "task": p.task, "phase": p.phase}
            | {"requests": {}, "gpus": []}
            for j in jobs.values()
            for p in j.pods.values()
            if p.node == n["name"] and p.phase not in (o.POD_SUCCEEDED, o.POD_FAILED)
        ]
        every = pods_up_to is None or len(pods) <= pods_up_to
        gpus = int(n.get("gpus", 0))
        keep = ("allocatable", "allocated", "virtualGpus")
        items.append(
            {"name": n["name"], "ready": True, "gpus": gpus, "gpuIds": list(range(gpus))}
            | {"podCount": len(pods), "podsListed": "all" if every else "gpu"}
            | {"pods": pods if every else [p for p in pods if p["gpus"]]}
            | {k: n[k] for k in keep}
        )
    return items


def job_table(jobs: Mapping[tuple[str, str], FakeJob]) -> list[JSON]:
    items = []
    for j in (jobs[k] for k in sorted(jobs)):
        tasks = [{"name": t["name"], "replicas": t["replicas"]} for t in j.manifest["spec"]["tasks"]]
        spec = {"queue": j.queue, "minAvailable": j.min_available, "tasks": tasks}
        running = sum(p.phase == o.POD_RUNNING for p in j.pods.values())
        status = {"state": {"phase": j.phase}, "running": running, "retryCount": j.retry_count}
        status |= {"startTime": j.start, "completionTime": j.completion}
        meta = {"name": j.name, "namespace": j.namespace, "creationTimestamp": j.created}
        items.append({"kind": "Job", "metadata": meta, "spec": spec, "status": status})
    return items
