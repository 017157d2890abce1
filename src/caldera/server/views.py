"""API views made for looking at the cluster (the dashboard's pages use them; so may any client).

  GET /api/v1/overview      capacity and allocation, queue shares, jobs and pods by phase, recent events
  GET /api/v1/allocations?node=N&podsUpTo=K   per node: what is allocated, to which pods, which GPUs (virtual
                            ones marked); only node N; a node of more than K pods lists only those holding GPUs
  GET /api/v1/jobtable      every job, with only the fields a table of jobs shows
  GET /api/v1/timeline?namespace=NS&job=J&since=T&until=T    pods on nodes over time (epoch seconds);
                            &format=columns: the same runs as columns (`timeline_columns`), a few times smaller
Each answer has "resourceVersion": watch from it (`/api/v1/watch?resourceVersion=N`) to follow
every change after the view. Shapes: `caldera.system.overview` and `caldera.system.timeline`.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from fastapi import APIRouter, Query

from caldera.system.api import JSON, ClusterAPI

CORE = "/api/v1"
# A run's fields as columns: texts as indexes into "strings", times as ms after "t0", booleans as 0/1.
TEXT_COLUMNS = ("namespace", "pod", "job", "task", "node", "outcome", "reason")


def views_router(cluster: ClusterAPI) -> APIRouter:
    r = APIRouter(prefix=CORE, tags=["views"])

    @r.get("/overview")
    def overview() -> JSON:
        """GPUs, CPUs and memory allocated against capacity; each queue's deserved, allocated and requested
        resources and its jobs by phase; jobs and pods by phase; the last events."""
        return cluster.overview()

    @r.get("/allocations")
    def allocations(
        node: Annotated[str | None, Query(description="only this node")] = None,
        pods_up_to: Annotated[
            int | None,
            Query(alias="podsUpTo", ge=0, description="a node of more pods lists only those holding GPUs"),
        ] = None,
    ) -> JSON:
        """Per node: allocatable, allocated, and each pod holding some of it (its requests and GPU ids)."""
        return cluster.allocations(node, pods_up_to)

    @r.get("/jobtable")
    def job_table() -> JSON:
        """Every job, as a Job object with only the fields a table of jobs shows (name, namespace, creation
        time, queue, minAvailable, task replicas, phase, running pods, retries, start and completion)."""
        return cluster.job_table()

    @r.get("/timeline")
    def timeline(
        namespace: Annotated[str | None, Query(description="only pods of this namespace")] = None,
        job: Annotated[str | None, Query(description="only pods of this job")] = None,
        since: Annotated[float | None, Query(description="only runs still going at or after this time")] = None,
        until: Annotated[float | None, Query(description="only runs started at or before this time")] = None,
        format: Annotated[
            Literal["items", "columns"], Query(description="items: one object per run; columns: see timeline_columns")
        ] = "items",
    ) -> JSON:
        """Every run of a pod on a node (start, end, outcome), from the stored event history."""
        view = cluster.timeline(namespace, job, since, until)
        return timeline_columns(view) if format == "columns" else view

    return r


def timeline_columns(view: JSON) -> JSON:
    """The timeline's runs as columns, which a page reads a few times faster than ten thousand objects:
    {"resourceVersion", "time", "truncated", "count", "strings": [every text once], "t0": epoch seconds,
    "columns": {"namespace" | "pod" | "job" | "task" | "node" | "outcome" | "reason": [index into strings],
    "start": [ms after t0], "end": [ms after t0, or null while it runs], "exitCode": [int or null],
    "restart": [0 or 1]}}: run i is column[i] of each."""
    items: list[JSON] = view["items"]
    t0 = math.floor(min((float(s["start"]) for s in items), default=0.0))
    strings: dict[str, int] = {}

    def text(value: object) -> int:
        return strings.setdefault(str(value or ""), len(strings))

    def ms(t: float | None) -> int | None:
        return None if t is None else round((float(t) - t0) * 1000)

    columns: JSON = {name: [text(s[name]) for s in items] for name in TEXT_COLUMNS}
    columns["start"] = [ms(s["start"]) for s in items]
    columns["end"] = [ms(s["end"]) for s in items]
    columns["exitCode"] = [s["exitCode"] for s in items]
    columns["restart"] = [1 if s["restart"] else 0 for s in items]
    rest = {k: v for k, v in view.items() if k != "items"}
    return {**rest, "count": len(items), "strings": list(strings), "t0": t0, "columns": columns}
