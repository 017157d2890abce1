"""The daemon's REST API: `ClusterAPI` over HTTP, on Kubernetes-like paths, behind a bearer token.

  POST   /apis/batch.volcano.sh/v1alpha1/namespaces/{ns}/jobs?submitDir=D   apply a Job (201)
  GET    /apis/batch.volcano.sh/v1alpha1/jobs | .../namespaces/{ns}/jobs     job summaries
  GET    .../namespaces/{ns}/jobs/{name}            the job summary
  GET    .../namespaces/{ns}/jobs/{name}/describe   spec, status, podgroup, events
  GET    .../namespaces/{ns}/jobs/{name}/explain    why it waits: per node class and for its queue
  DELETE .../namespaces/{ns}/jobs/{name}
  POST   .../namespaces/{ns}/jobs/{name}/commands   {"action": "AbortJob" | "ResumeJob"}
  POST   .../namespaces/{ns}/jobs/{name}/scale      {"replicas": N, "task": T | null} → the job summary
  POST   /apis/scheduling.volcano.sh/v1beta1/queues            apply a Queue (201)
  GET    /apis/scheduling.volcano.sh/v1beta1/queues[/{name}]
  PUT    /apis/scheduling.volcano.sh/v1beta1/queues/{name}/state {"state": "Open" | "Closed"}
  DELETE /apis/scheduling.volcano.sh/v1beta1/queues/{name}
  POST   /apis/scheduling.k8s.io/v1/priorityclasses            apply a PriorityClass (201)
  GET    /apis/scheduling.k8s.io/v1/priorityclasses            the PriorityClasses
  GET    /api/v1/nodes                                         node summaries
  PATCH  /api/v1/nodes/{name}   {"metadata": {"labels"}, "spec": {"taints"}} (merge patch) → the node summary
  GET    /api/v1/events | /api/v1/namespaces/{ns}/events?object=O&since=ID
  GET    /api/v1/namespaces/{ns}/pods/{pod}/log?follow=B&tailLines=N&previous=B&sinceSeconds=S|sinceTime=T&timestamps=B
                                                                the log, streamed
  GET    /api/v1/namespaces/{ns}/pods/{pod}/logfile                    {"path"} of the log file
  GET    .../watch/...      changes as a stream of JSON lines (see `watch`)
  GET    /info          POST /shutdown?stopPods=B (202)          GET /openapi.json
  GET    /api/v1/overview | allocations | jobtable | timeline           views (see `views`)
The web dashboard is served beside it (`dashboard`: /, /jobs, /nodes, /timeline, /login).
Lists come as {"kind": "<Kind>List", "items": [...]}. Every request needs the token
(or the dashboard's session with its CSRF token: `auth`);
Lists come as {"kind": "<Kind>List", "items": [...]}. Every request needs the token;
errors are one JSON line (see `errors`); a body over 4 MiB is refused with 413 unread (`limits`). Handlers are plain functions, so FastAPI runs
the blocking cluster calls in its thread pool, never on the event loop. Submitting a job, the most
frequent request, skips FastAPI's per-request machinery (`submit`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, FastAPI, Query, Request
from fastapi.responses import PlainTextResponse, StreamingResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from caldera import __version__
from caldera.core.errors import FieldError, ValidationError
from caldera.server.dashboard import Dashboard
from caldera.server.errors import ERROR_RESPONSES, BearerAuth, CatchAll, install_error_handlers
from caldera.server.limits import BodyLimit
from caldera.server.logstream import POLL_SECONDS, PodWatch, previous_span, stream_file, stream_span
from caldera.server.logtimes import stream_lines
from caldera.server.submit import JOBS, FastSubmit, job_manifest, of_kind
from caldera.server.views import views_router
from caldera.server.watch import watch_router
from caldera.system.api import JSON, ClusterAPI
from caldera.utils.clock import Clock, SystemClock

QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
CORE = "/api/v1"
JOB = f"{JOBS}/namespaces/{{namespace}}/jobs/{{name}}"
SUCCESS: JSON = {"kind": "Status", "status": "Success"}

Manifest = Annotated[dict[str, Any], Body(description="the object's manifest, as JSON")]
Objects = Annotated[list[str] | None, Query(alias="object", description="only events about these objects")]
Since = Annotated[int, Query(ge=0, le=2**63 - 1, description="only events after this event id")]  # SQLite's range


class CommandBody(BaseModel):
    action: Literal["AbortJob", "ResumeJob"]


class QueueStateBody(BaseModel):
    state: Literal["Open", "Closed"]


class ScaleBody(BaseModel):
    replicas: int
    task: str | None = None


def create_app(
    cluster: ClusterAPI,
    token: str,
    *,
    on_shutdown: Callable[[bool], None] | None = None,
    log_poll: float = POLL_SECONDS,
    clock: Clock | None = None,
) -> FastAPI:
    """The API over `cluster`, for clients holding `token`.

    `on_shutdown(stop_pods)` is how POST /shutdown stops the process that serves the
    app (the daemon's main stops the server, then the cluster); without it the
    cluster's own `shutdown` is called at once."""
    if not token:
        raise ValueError("the API token must not be empty")
    app = FastAPI(
        title="caldera",
        version=__version__,
        description="The caldera daemon's API: Volcano Jobs and Queues, nodes, events and pod logs.",
        docs_url=None,  # the interactive documentation is a dashboard page (/docs), behind its login
        redoc_url=None,
        responses=ERROR_RESPONSES,
    )

    install_error_handlers(app)
    closing = threading.Event()  # set on POST /shutdown: watch streams end instead of holding the server up
    app.include_router(_volcano(cluster))
    app.include_router(_core(cluster, log_poll, clock or SystemClock()))
    app.include_router(watch_router(cluster, clock or SystemClock(), closing))
    app.include_router(views_router(cluster))
    app.include_router(_system(cluster, on_shutdown, closing))
    app.add_middleware(FastSubmit, cluster=cluster)  # innermost: behind the token check and the body limit
    app.add_middleware(CatchAll)
    app.add_middleware(BearerAuth, token=token)
    app.add_middleware(Dashboard, token=token, clock=clock or SystemClock(), cluster=cluster)
    app.add_middleware(BodyLimit)  # added last, so it runs first: no body over the limit is read, by anyone
    return app


def _volcano(cluster: ClusterAPI) -> APIRouter:
    r = APIRouter(tags=["volcano"])

    @r.post(f"{JOBS}/namespaces/{{namespace}}/jobs", status_code=201)
    def apply_job(
        namespace: str, manifest: Manifest, submit_dir: Annotated[str | None, Query(alias="submitDir")] = None
    ) -> JSON:
        # What the OpenAPI description says; requests are answered by `submit.FastSubmit`, the same way.
        return cluster.apply(job_manifest(manifest, namespace), submit_dir)

    @r.get(f"{JOBS}/jobs")
    def list_all_jobs() -> JSON:
        return _list("JobList", cluster.list_jobs(None))

    @r.get(f"{JOBS}/namespaces/{{namespace}}/jobs")
    def list_jobs(namespace: str) -> JSON:
        return _list("JobList", cluster.list_jobs(namespace))

    @r.get(JOB)
    def get_job(namespace: str, name: str) -> JSON:
        return cluster.get_job(namespace, name)

    @r.get(f"{JOB}/describe")
    def describe_job(namespace: str, name: str) -> JSON:
        return cluster.describe_job(namespace, name)

    @r.get(f"{JOB}/explain")
    def explain_job(namespace: str, name: str) -> JSON:
        return cluster.explain_job(namespace, name)

    @r.delete(JOB)
    def delete_job(namespace: str, name: str) -> JSON:
        cluster.delete_job(namespace, name)
        return SUCCESS

    @r.post(f"{JOB}/commands")
    def command(namespace: str, name: str, body: CommandBody) -> JSON:
        cluster.command(namespace, name, body.action)
        return SUCCESS

    @r.post(f"{JOB}/scale")
    def scale(namespace: str, name: str, body: ScaleBody) -> JSON:
        return cluster.scale_job(namespace, name, body.replicas, body.task)

    @r.post(QUEUES, status_code=201)
    def apply_queue(manifest: Manifest) -> JSON:
        return cluster.apply(of_kind(manifest, "/apis/scheduling.volcano.sh/v1beta1", "Queue"))

    @r.get(QUEUES)
    def list_queues() -> JSON:
        return _list("QueueList", cluster.list_queues())

    @r.get(f"{QUEUES}/{{name}}")
    def get_queue(name: str) -> JSON:
        return cluster.get_queue(name)

    @r.put(f"{QUEUES}/{{name}}/state")
    def set_queue_state(name: str, body: QueueStateBody) -> JSON:
        return cluster.set_queue_state(name, body.state)

    @r.delete(f"{QUEUES}/{{name}}")
    def delete_queue(name: str) -> JSON:
        cluster.delete_queue(name)
        return SUCCESS

    @r.post(PRIORITY_CLASSES, status_code=201)
    def apply_priority_class(manifest: Manifest) -> JSON:
        return cluster.apply(of_kind(manifest, "/apis/scheduling.k8s.io/v1", "PriorityClass"))

    @r.get(PRIORITY_CLASSES)
    def list_priority_classes() -> JSON:
        return _list("PriorityClassList", cluster.list_priority_classes())

    return r


def _core(cluster: ClusterAPI, log_poll: float, clock: Clock) -> APIRouter:
    r = APIRouter(prefix=CORE, tags=["core"])

    @r.get("/nodes")
    def list_nodes() -> JSON:
        return _list("NodeList", cluster.list_nodes())

    @r.patch("/nodes/{name}")
    def patch_node(name: str, patch: Manifest) -> JSON:
        labels, taints = _node_patch(patch)
        return cluster.patch_node(name, labels, taints)

    @r.get("/events")
    def all_events(objects: Objects = None, since: Since = 0) -> JSON:
        return _list("EventList", cluster.events(None, tuple(objects or ()), since))

    @r.get("/namespaces/{namespace}/events")
    def events(namespace: str, objects: Objects = None, since: Since = 0) -> JSON:
        return _list("EventList", cluster.events(namespace, tuple(objects or ()), since))

    @r.get("/namespaces/{namespace}/pods/{pod}/logfile")
    def log_file(namespace: str, pod: str) -> JSON:
        return {"path": cluster.pod_log(namespace, pod)}

    @r.get("/namespaces/{namespace}/pods/{pod}/log", response_class=PlainTextResponse)
    async def log(
        namespace: str,
        pod: str,
        follow: bool = False,
        tail_lines: Annotated[int | None, Query(alias="tailLines", description="the last N lines")] = None,
        since_seconds: Annotated[
            int | None, Query(alias="sinceSeconds", ge=0, description="only lines of the last N seconds")
        ] = None,
        since_time: Annotated[
            str | None, Query(alias="sinceTime", description="only lines from this RFC 3339 time")
        ] = None,
        timestamps: Annotated[bool, Query(description="each line after its RFC 3339 time, as kubectl logs")] = False,
        previous: Annotated[bool, Query(description="the attempt before the last one (never followed)")] = False,
    ) -> StreamingResponse:
        since = _since(since_seconds, since_time, clock)
        if previous and (since is not None or timestamps):
            raise ValidationError([FieldError("previous", "goes with neither sinceSeconds, sinceTime nor timestamps")])
        path = Path(await run_in_threadpool(cluster.pod_log, namespace, pod))
        if previous:
            start, end = await run_in_threadpool(previous_span, path, f"{namespace}/{pod}")
            return StreamingResponse(stream_span(path, start, end, tail_lines), media_type="text/plain; charset=utf-8")
        watch = PodWatch(cluster, namespace, pod)

        async def finished() -> bool:
            return await run_in_threadpool(watch.finished)

        if since is None and not timestamps:
            body = stream_file(path, tail=tail_lines, follow=follow, finished=finished, poll=log_poll)
        else:
            body = stream_lines(
                path,
                tail=tail_lines,
                since=since,
                timestamps=timestamps,
                follow=follow,
                finished=finished,
                poll=log_poll,
            )
        return StreamingResponse(body, media_type="text/plain; charset=utf-8")

    return r


def _system(cluster: ClusterAPI, on_shutdown: Callable[[bool], None] | None, closing: threading.Event) -> APIRouter:
    r = APIRouter(tags=["daemon"])

    @r.get("/info")
    def info(request: Request) -> JSON:
        data = dict(cluster.info())
        if not data.get("listening"):
            data["listening"] = str(request.base_url).rstrip("/")
        return data

    @r.post("/shutdown", status_code=202)
    def shutdown(stop_pods: Annotated[bool, Query(alias="stopPods")] = True) -> JSON:
        closing.set()
        if on_shutdown is None:
            cluster.shutdown(stop_pods=stop_pods)
        else:
            on_shutdown(stop_pods)
        return {"kind": "Status", "status": "ShuttingDown", "stopPods": stop_pods}

    return r


def _node_patch(patch: JSON) -> tuple[dict[str, str | None] | None, list[JSON] | None]:
    """The labels and taints of a node merge patch; anything else in it is refused."""
    errors = [
        FieldError(k, "a node patch changes metadata.labels and spec.taints only")
        for k in patch
        if k not in ("metadata", "spec")
    ]
    meta, spec = patch.get("metadata") or {}, patch.get("spec") or {}
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        raise ValidationError([FieldError("", "metadata and spec must be mappings")])
    errors += [FieldError(f"metadata.{k}", "only labels can be patched") for k in meta if k != "labels"]
    errors += [FieldError(f"spec.{k}", "only taints can be patched") for k in spec if k != "taints"]
    labels, taints = meta.get("labels"), spec.get("taints")
    if labels is not None and not (
        isinstance(labels, dict) and all(isinstance(v, str | None) for v in labels.values())
    ):
        errors.append(FieldError("metadata.labels", "must map label keys to text (null removes a label)"))
    if taints is not None and not isinstance(taints, list):
        errors.append(FieldError("spec.taints", "must be a list of taints"))
    if errors:
        raise ValidationError(errors)
    return labels, taints


def _since(seconds: int | None, time: str | None, clock: Clock) -> float | None:
    """The moment `sinceSeconds` or `sinceTime` names (Kubernetes takes one of the two), in seconds since the epoch."""
    if seconds is not None and time is not None:
        raise ValidationError([FieldError("sinceTime", "give sinceSeconds or sinceTime, not both")])
    if seconds is not None:
        return clock.now() - seconds
    if time is None:
        return None
    try:
        return datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ValidationError([FieldError("sinceTime", f"{time!r} is not an RFC 3339 time")]) from None


def _list(kind: str, items: list[JSON]) -> JSON:
    return {"kind": kind, "items": items}
