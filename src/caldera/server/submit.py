"""Submitting a job (POST .../namespaces/{ns}/jobs), answered without FastAPI's per-request machinery.

Submission is the request a busy daemon gets most of, and FastAPI's route matching,
dependency solving, body validation and response encoding cost more CPU than the job's
own validation (which `ClusterAPI.apply` does once, with caldera's schema and messages).
So `FastSubmit`, the innermost middleware, answers this one path itself: it reads the body
(its size is bounded by `limits.BodyLimit` outside it), parses the JSON, checks apiVersion,
kind and namespace as the FastAPI route did (`job_manifest`), and hands the job to the cluster.
The embedded cluster (`AppliesLater`) checks it on the event loop (no disk but a few stats) and
gives back a future that its control loop sets once the job is committed: the event loop awaits
it, so no worker thread is lent to wait for the turn (that handoff and its wake-ups were
the costliest part of the HTTP path). Any other cluster is called in a worker thread. The answer
is 201 with the stored job, or one JSON error line (`errors.caldera_error_response`). Everything else goes on to FastAPI, which still
declares the route for the OpenAPI description (`app.py` calls the same `job_manifest`).
Token checks, the body limit and the catch-all for unexpected errors sit outside it and
apply as to any request.
"""

from __future__ import annotations

import asyncio
import json
import re

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from caldera.core.errors import CalderaError, FieldError, ValidationError
from caldera.server.errors import caldera_error_response
from caldera.system.api import JSON, AppliesLater, ClusterAPI, Conflict

JOBS = "/apis/batch.volcano.sh/v1alpha1"
SUBMIT_PATH = re.compile(rf"{re.escape(JOBS)}/namespaces/([^/]+)/jobs")
TIMEOUT = 60.0  # seconds a submission waits for the control loop, as `ControlLoop.call`


def of_kind(manifest: JSON, group_path: str, kind: str) -> JSON:
    """Refuse a manifest sent to another kind's path (apiVersion and kind, when given, must match)."""
    api = group_path.removeprefix("/apis/")
    errors = []
    if manifest.get("apiVersion") not in (None, api):
        errors.append(FieldError("apiVersion", f"this path takes {api}, not {manifest['apiVersion']}"))
    if manifest.get("kind") not in (None, kind):
        errors.append(FieldError("kind", f"this path takes {kind}, not {manifest['kind']}"))
    if errors:
        raise ValidationError(errors)
    return manifest


def job_manifest(manifest: object, namespace: str) -> JSON:
    """The manifest of a Job posted to `namespace`'s jobs, in that namespace (a different metadata.namespace
    is an error, as in Kubernetes; so are another kind's apiVersion or kind)."""
    if not isinstance(manifest, dict):
        raise ValidationError([FieldError("", "the body must be a JSON object (the job's manifest)")])
    of_kind(manifest, JOBS, "Job")
    meta = manifest.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise ValidationError([FieldError("metadata", "must be a mapping")])
    given = meta.get("namespace")
    if given not in (None, "", namespace):
        rule = f"{given!r} does not match the namespace of the request ({namespace!r})"
        raise ValidationError([FieldError("metadata.namespace", rule)])
    return {**manifest, "metadata": {**meta, "namespace": namespace}}


class FastSubmit:
    """ASGI middleware answering POST .../namespaces/{ns}/jobs itself (see the module)."""

    def __init__(self, app: ASGIApp, cluster: ClusterAPI) -> None:
        self.app = app
        self.cluster = cluster
        self.later = cluster if isinstance(cluster, AppliesLater) else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = SUBMIT_PATH.fullmatch(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if found is None:
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        try:
            manifest = job_manifest(_parse(body), found.group(1))
            submit_dir = QueryParams(scope.get("query_string", b"")).get("submitDir")
            stored = await self._apply(manifest, submit_dir)
        except CalderaError as e:
            await caldera_error_response(e)(scope, receive, send)
            return
        await JSONResponse(stored, status_code=201)(scope, receive, send)

    async def _apply(self, manifest: JSON, submit_dir: str | None) -> JSON:
        """`cluster.apply`: awaited on the event loop where the cluster takes it so (`AppliesLater`: no worker
        thread waits for the control loop's turn), else in a worker thread. A Conflict is tried again the waiting
        way: a name that a deleted job's stopping pods still hold is free once they are gone (`apply` waits)."""
        if self.later is None:
            return await run_in_threadpool(self.cluster.apply, manifest, submit_dir)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(self.later.apply_later(manifest, submit_dir)), TIMEOUT)
        except Conflict:
            return await run_in_threadpool(self.cluster.apply, manifest, submit_dir)


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: nothing to answer
            return b""
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _parse(body: bytes) -> object:
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as e:  # RecursionError: nesting deeper than the parser goes
        what = str(e) if isinstance(e, ValueError) else "it is nested too deeply"
        raise ValidationError([FieldError("body", f"not valid JSON: {what}")]) from None
