"""API views made for looking at the cluster (the dashboard's pages use them; so may any client).

  GET /api/v1/overview      capacity and allocation, queue shares, jobs and pods by phase, recent events
  GET /api/v1/allocations?node=N&podsUpTo=K   per node: what is allocated, to which pods, which GPUs (virtual
                            ones marked); only node N; a node of more than K pods lists only those holding GPUs
  GET /api/v1/jobtable      every job, with only the fields a table of jobs shows
  GET /api/v1/timeline?namespace=NS&job=J&since=T&until=T    pods on nodes over time (epoch seconds)
Each answer has "resourceVersion": watch from it (`/api/v1/watch?resourceVersion=N`) to follow
every change after the view. Shapes: `caldera.system.overview` and `caldera.system.timeline`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from caldera.system.api import JSON, ClusterAPI

CORE = "/api/v1"


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
    ) -> JSON:
        """Every run of a pod on a node (start, end, outcome), from the stored event history."""
        return cluster.timeline(namespace, job, since, until)

    return r
