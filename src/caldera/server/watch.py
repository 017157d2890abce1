"""Watching over HTTP, as Kubernetes does: a stream of JSON lines {"type", "object"}, one per change.

  GET /apis/batch.volcano.sh/v1alpha1/watch/jobs | .../watch/namespaces/{ns}/jobs
  GET /api/v1/watch/pods | /api/v1/watch/namespaces/{ns}/pods
  GET /api/v1/watch/nodes        GET /apis/scheduling.volcano.sh/v1beta1/watch/queues
  GET /api/v1/watch?kind=Job&kind=Pod&namespace=NS                 several kinds in one stream
every one with ?resourceVersion=N (the changes after N; absent or 0: every current object
as ADDED first, then the changes), ?timeoutSeconds=S (the stream ends after S seconds;
absent: when the client goes or the daemon stops) and ?allowWatchBookmarks=true (after
the initial ADDED events, a BOOKMARK whose metadata has the version they are at and the
annotation k8s.io/initial-events-end). Types: ADDED, MODIFIED, DELETED, BOOKMARK, and
ERROR (a Status object) when the stream cannot go on, e.g. 410 Expired: the version is
older than the change log keeps, so the client lists again.

A version too old or a bad parameter is answered before the stream starts, as a plain
error (410, 422). The stream asks the cluster for changes at most WAIT_SECONDS at a time,
so a client that goes away, or a daemon that stops, ends it within that time.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse
from pydantic_core import to_json
from starlette.concurrency import run_in_threadpool

from caldera.system.api import JSON, ClusterAPI, Expired
from caldera.utils.clock import Clock

WAIT_SECONDS = 1.0
MEDIA_TYPE = "application/json; charset=utf-8"  # one JSON document per line, as the Kubernetes API streams them

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass(frozen=True, slots=True)
class WatchParams:
    version: int | None
    timeout: int | None
    bookmarks: bool


def _params(
    resource_version: Annotated[
        int | None,
        Query(alias="resourceVersion", ge=0, le=2**63 - 1, description="the changes after this version (0: all first)"),
    ] = None,
    timeout_seconds: Annotated[
        int | None, Query(alias="timeoutSeconds", ge=0, description="end the stream after this long")
    ] = None,
    allow_watch_bookmarks: Annotated[
        bool, Query(alias="allowWatchBookmarks", description="BOOKMARK events (the end of the initial ADDED ones)")
    ] = False,
) -> WatchParams:
    return WatchParams(resource_version, timeout_seconds, allow_watch_bookmarks)


Params = Annotated[WatchParams, Depends(_params)]
Kinds = Annotated[list[str] | None, Query(alias="kind", description="kinds to watch (default: all)")]


def watch_router(cluster: ClusterAPI, clock: Clock, closing: threading.Event) -> APIRouter:
    r = APIRouter(tags=["watch"])

    async def stream(kinds: tuple[str, ...], namespace: str | None, p: WatchParams) -> StreamingResponse:
        since = p.version or None  # 0 means "from the current state", as in Kubernetes
        first = await run_in_threadpool(cluster.changes, kinds, namespace, since, 0.0)  # errors: before the stream
        if since is None and p.bookmarks:
            first = {**first, "events": [*first["events"], _bookmark(int(first["resourceVersion"]))]}
        deadline = None if p.timeout is None else clock.now() + p.timeout
        body = _lines(cluster, clock, closing, kinds, namespace, first, deadline)
        return StreamingResponse(body, media_type=MEDIA_TYPE)

    @r.get("/apis/batch.volcano.sh/v1alpha1/watch/jobs")
    async def watch_all_jobs(p: Params) -> StreamingResponse:
        return await stream(("Job",), None, p)

    @r.get("/apis/batch.volcano.sh/v1alpha1/watch/namespaces/{namespace}/jobs")
    async def watch_jobs(namespace: str, p: Params) -> StreamingResponse:
        return await stream(("Job",), namespace, p)

    @r.get("/api/v1/watch/pods")
    async def watch_all_pods(p: Params) -> StreamingResponse:
        return await stream(("Pod",), None, p)

    @r.get("/api/v1/watch/namespaces/{namespace}/pods")
    async def watch_pods(namespace: str, p: Params) -> StreamingResponse:
        return await stream(("Pod",), namespace, p)

    @r.get("/api/v1/watch/nodes")
    async def watch_nodes(p: Params) -> StreamingResponse:
        return await stream(("Node",), None, p)

    @r.get("/apis/scheduling.volcano.sh/v1beta1/watch/queues")
    async def watch_queues(p: Params) -> StreamingResponse:
        return await stream(("Queue",), None, p)

    @r.get("/api/v1/watch")
    async def watch_kinds(
        p: Params,
        kinds: Kinds = None,
        namespace: Annotated[str | None, Query(description="only objects of this namespace")] = None,
    ) -> StreamingResponse:
        return await stream(tuple(kinds or ()), namespace, p)

    return r


def _bookmark(version: int) -> JSON:
    meta = {"resourceVersion": str(version), "annotations": {INITIAL_EVENTS_END: "true"}}
    return {"type": "BOOKMARK", "object": {"kind": "Status", "metadata": meta}}


async def _lines(
    cluster: ClusterAPI,
    clock: Clock,
    closing: threading.Event,
    kinds: tuple[str, ...],
    namespace: str | None,
    first: JSON,
    deadline: float | None,
) -> AsyncIterator[bytes]:
    batch = first
    while True:
        if batch["events"]:
            # pydantic's encoder (FastAPI's own): a few times faster than json.dumps on the first thousand objects
            yield b"".join(to_json(e) + b"\n" for e in batch["events"])
        since = int(batch["resourceVersion"])
        left = WAIT_SECONDS if deadline is None else min(WAIT_SECONDS, deadline - clock.now())
        if closing.is_set() or left <= 0:
            return
        try:
            batch = await run_in_threadpool(cluster.changes, kinds, namespace, since, left)
        except Expired as e:
            status = {"kind": "Status", "status": "Failure", "reason": "Expired", "code": 410, "message": str(e)}
            yield to_json({"type": "ERROR", "object": status}) + b"\n"
            return
