"""A small synchronous Kubernetes REST client: any resource by path, lists, patches, watches.

The API (stable: the Kubernetes mode and the test kit build on it):

    config = load_kubeconfig(path)          # or in_cluster(); see caldera.backends.kube.kubeconfig
    with KubeClient(config) as kube:
        pods = resource_path("v1", "pods", namespace="default")          # /api/v1/namespaces/default/pods
        jobs = resource_path("batch.volcano.sh/v1alpha1", "jobs", namespace="ns")
        kube.create(pods, manifest)                                       # POST, the stored object back
        kube.get(f"{pods}/p1")                                            # GET
        kube.get_text(f"{pods}/p1/log")                                   # GET text: logs, /readyz
        kube.replace(f"{pods}/p1", obj)                                   # PUT (obj's resourceVersion: optimistic)
        kube.patch(f"{pods}/p1", {"metadata": {"labels": {"a": "b"}}})   # merge patch (default)
        kube.patch(path, patch, kind="strategic" | "json")                # strategic merge / JSON patch
        kube.apply(path, manifest, field_manager="caldera", force=True)   # server-side apply (PATCH)
        kube.create(f"{pods}/p1/binding", binding)                        # subresources are path segments
        kube.replace(f"{jobs}/j1/status", job)                            # e.g. the status subresource
        kube.delete(f"{pods}/p1", grace_period_seconds=0, propagation_policy="Background")
        kube.delete_collection(pods, label_selector="app=x")
        page = kube.list(pods, label_selector="a=b", limit=500)           # one page: the List object
        items, version = kube.list_all(pods)                              # every page; the list's resourceVersion
        for kind, obj in kube.watch(pods, resource_version=version, timeout_seconds=300):
            ...                                                           # ADDED | MODIFIED | DELETED | BOOKMARK

Errors (`caldera.backends.kube.errors`, importable from here too): every failure is a `KubeError`
(a CalderaError); nothing of the HTTP layer (`caldera.backends.kube.transport`, on http.client) leaves this module.
`ApiError` carries the API server's Status (`code`, `reason`, `message`, `details`), with the
subclasses `NotFound` (404), `Conflict` (409: a stale resourceVersion or AlreadyExists), `Gone`
(410: a resourceVersion or continue token too old — list again, then watch from the list's
version; raised both for a 410 reply and for a watch's ERROR event with code 410) and
`Unreachable` (no connection, a timeout, a stream cut). A watch whose connection stays silent
longer than `read_timeout` raises `Unreachable`: with `allowWatchBookmarks` (always asked for)
the server sends a BOOKMARK about once a minute, so a silent connection is a dead one.

Invariants: one kept-alive connection per `KubeClient` and thread (calls may come from several threads;
each watch or followed log holds a connection of its own until it ends or the iterator is closed); a token file
is read again whenever it changes on disk (rotated service-account tokens); request and reply
bodies are JSON, objects are plain dicts (`JSON`).
"""

from __future__ import annotations

import builtins
import codecs
import http.client
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Literal, NoReturn, cast
from urllib.parse import urlencode

from caldera.backends.kube.auth import BearerToken, ssl_context
from caldera.backends.kube.errors import (
    JSON,
    ApiError,
    Conflict,
    Gone,
    KubeError,
    NotFound,
    Unreachable,
    raise_status,
)
from caldera.backends.kube.kubeconfig import KubeConfig
from caldera.backends.kube.paths import delete_options, query, query_value, request_kind, resource_path
from caldera.backends.kube.transport import Reply, Transport

__all__ = [
    "JSON",
    "ApiError",
    "Conflict",
    "Gone",
    "KubeClient",
    "KubeError",
    "NotFound",
    "PatchKind",
    "Unreachable",
    "WatchEvent",
    "resource_path",
]
log = logging.getLogger("caldera.kube.http")
PatchKind = Literal["merge", "strategic", "json"]
STREAM_CHUNK = 1 << 16  # the most a followed log's read takes at once (a watch reads line by line, any length)
WatchEvent = tuple[str, JSON]

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",  # JSON is YAML: the manifest is sent as JSON
}


class KubeClient:
    """Requests to one API server as one identity; see the module docstring for the API."""

    def __init__(self, config: KubeConfig, *, timeout: float = 30.0, user_agent: str = "caldera") -> None:
        self.config = config
        self.server = config.server
        self._token = BearerToken(config)
        context = ssl_context(config) if config.server.startswith("https://") else None
        self._transport = Transport(config.server, context, config.tls_server_name, timeout, user_agent)
        self.requests: Counter[str] = Counter()  # "VERB resource[/subresource]" → requests sent (watches not)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ reads

    def get(self, path: str, **params: str | int | bool) -> JSON:
        return self._request("GET", path, params=params)

    def get_text(self, path: str, **params: str | int | bool) -> str:
        """GET a plain-text endpoint: /readyz, /livez, a pod's log (pods/NAME/log)."""
        return self._send("GET", path, params=params).body.decode("utf-8", errors="replace")

    def stream_text(
        self, path: str, params: Mapping[str, str | int | bool] | None = None, *, read_timeout: float | None = None
    ) -> Iterator[str]:
        """GET a plain-text stream chunk by chunk until the server ends it (a followed log: pods/NAME/log?follow=true).

        `read_timeout` None waits for the next chunk as long as it takes (a quiet log is not a dead one)."""
        with self._transport.stream(_target(path, params), self._token.headers(), read_timeout) as reply:
            _check(reply)
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            while chunk := self._read(lambda: reply.read1(STREAM_CHUNK), f"GET {path}"):
                text = decoder.decode(chunk)
                if text:
                    yield text
            rest = decoder.decode(b"", final=True)
            if rest:
                yield rest

    def list(
        self,
        path: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> JSON:
        """One page of a collection: the List object (`items`, `metadata.resourceVersion`, `metadata.continue`)."""
        params = query(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            limit=limit,
            resourceVersion=resource_version,
            resourceVersionMatch=resource_version_match,
        )
        if continue_token:
            params["continue"] = continue_token
        return self._request("GET", path, params=params)

    def list_all(
        self,
        path: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        resource_version: str | None = None,
    ) -> tuple[builtins.list[JSON], str]:
        """Every item of a collection, page by page, and the resourceVersion to watch from.

        `resource_version="0"`: any recent state, served from the API server's watch cache (client-go's reflectors
        list so at start), about 5 times cheaper for the server than a consistent read from etcd.
        Raises Gone if a continue token expired before the last page (list again)."""
        items: list[JSON] = []
        token: str | None = None
        while True:
            page = self.list(
                path,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=page_size,
                continue_token=token,
                resource_version=None if token else resource_version,  # a continue token carries its version
            )
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            token = meta.get("continue") or None
            if token is None:
                return items, str(meta.get("resourceVersion", ""))

    # ------------------------------------------------------------ writes

    def create(self, path: str, body: JSON, *, field_manager: str | None = None) -> JSON:
        """POST `body` to a collection (or a subresource such as pods/NAME/binding): the stored object."""
        return self._request("POST", path, body=body, params=query(fieldManager=field_manager))

    def replace(self, path: str, body: JSON, *, field_manager: str | None = None) -> JSON:
        """PUT: Conflict if `body`'s metadata.resourceVersion is not the stored one (when it gives one)."""
        return self._request("PUT", path, body=body, params=query(fieldManager=field_manager))

    def patch(
        self,
        path: str,
        patch: JSON | builtins.list[JSON],
        *,
        kind: PatchKind = "merge",
        field_manager: str | None = None,
    ) -> JSON:
        """PATCH with a JSON merge patch (default), a strategic merge patch, or a JSON patch (a list)."""
        return self._request(
            "PATCH",
            path,
            body=patch,
            params=query(fieldManager=field_manager),
            content_type=PATCH_CONTENT_TYPES[kind],
        )

    def apply(self, path: str, manifest: JSON, *, field_manager: str, force: bool = False) -> JSON:
        """Server-side apply of `manifest` to the object at `path` (created if absent) as `field_manager`.

        `force` takes over fields another manager owns (else a Conflict names them)."""
        params = query(fieldManager=field_manager, force="true" if force else None)
        return self._request("PATCH", path, body=manifest, params=params, content_type=PATCH_CONTENT_TYPES["apply"])

    def delete(
        self,
        path: str,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> JSON:
        """DELETE one object: the object (now terminating) or a Status, as the server answers."""
        return self._request(
            "DELETE", path, body=delete_options(grace_period_seconds, propagation_policy, preconditions)
        )

    def delete_collection(
        self,
        path: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
    ) -> JSON:
        """DELETE every object of a collection that the selectors match."""
        return self._request(
            "DELETE",
            path,
            body=delete_options(grace_period_seconds, propagation_policy, None),
            params=query(labelSelector=label_selector, fieldSelector=field_selector),
        )

    # ------------------------------------------------------------ watch

    def watch(
        self,
        path: str,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int | None = None,
        read_timeout: float = 120.0,
    ) -> Iterator[WatchEvent]:
        """(type, object) for each change of a collection after `resource_version`, until the server ends
        the watch (after `timeout_seconds`) or the caller closes the iterator.

        Types are ADDED, MODIFIED, DELETED and BOOKMARK (an object with only kind, apiVersion and
        metadata.resourceVersion: where to watch from next; the server also sends one shortly before it
        ends a watch at `timeout_seconds`). Raises Gone when the version is too old, ApiError for another ERROR event, Unreachable when nothing (not even
        a bookmark) arrived for `read_timeout` seconds or the connection broke."""
        params = query(
            watch="true",
            allowWatchBookmarks="true",
            resourceVersion=resource_version,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            timeoutSeconds=timeout_seconds,
        )
        with self._transport.stream(_target(path, params), self._token.headers(), read_timeout) as reply:
            _check(reply)
            while line := self._read(reply.readline, f"watch {path}"):
                if line.strip():
                    yield _watch_event(line)

    # ------------------------------------------------------------ plumbing

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: JSON | builtins.list[JSON] | None = None,
        params: Mapping[str, str | int | bool] | None = None,
        content_type: str = "application/json",
    ) -> JSON:
        content = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        reply = self._send(method, path, params=params, content=content, content_type=content_type)
        if not reply.body:
            return {}
        try:
            return cast(JSON, json.loads(reply.body))
        except ValueError:
            raise KubeError(f"{self.server}: {method} {path}: the reply is not JSON") from None

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int | bool] | None = None,
        content: bytes | None = None,
        content_type: str = "application/json",
    ) -> Reply:
        headers = self._token.headers()
        if content is not None:
            headers["Content-Type"] = content_type
        self.requests[f"{method} {request_kind(path)}"] += 1  # a lost count under a thread race is harmless
        reply = self._transport.request(method, _target(path, params), content, headers)
        if log.isEnabledFor(logging.DEBUG):  # -vv: a line per request
            log.debug("%s %s: %d %s", method, path, reply.status, reply.reason)
        if reply.status >= 400:
            _raise(reply.status, reply.reason, reply.body)
        return reply

    def _read(self, read: Callable[[], bytes], what: str) -> bytes:
        """The next line or chunk of a stream (b"" at its end); a timeout or a cut connection is Unreachable."""
        try:
            return read()
        except (OSError, http.client.HTTPException) as e:
            self._transport.fail(e, what)
        except (AttributeError, ValueError):  # the client was closed meanwhile: http.client's reply lost its file
            self._transport.fail(ConnectionAbortedError("the client was closed"), what)


def _target(path: str, params: Mapping[str, str | int | bool] | None) -> str:
    """The request target: the path and its query."""
    if not params:
        return path
    return f"{path}?{urlencode({k: query_value(v) for k, v in params.items()})}"


def _check(reply: http.client.HTTPResponse) -> None:
    """An error status of a stream, raised with the server's Status."""
    if reply.status >= 400:
        _raise(reply.status, reply.reason, reply.read())


def _watch_event(line: bytes) -> WatchEvent:
    try:
        event = json.loads(line)
    except ValueError:
        raise KubeError(f"a watch line that is not JSON: {line[:200]!r}") from None
    if (
        not isinstance(event, dict)
        or not isinstance(event.get("type"), str)
        or not isinstance(event.get("object"), dict)
    ):
        raise KubeError(f"a watch line that is not an event: {line[:200]!r}")
    if event["type"] == "ERROR":
        raise_status(event["object"], 500)
    return event["type"], event["object"]


def _raise(code: int, reason: str, body: bytes) -> NoReturn:
    try:
        status = json.loads(body)
    except ValueError:
        status = None
    if not isinstance(status, dict):
        status = {"message": body.decode("utf-8", errors="replace")[:500] or reason}
    raise_status(status, code)
