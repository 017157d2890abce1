"""A small synchronous Kubernetes REST client (httpx): any resource by path, lists, patches, watches.

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
(a CalderaError); nothing from httpx leaves this module.
`ApiError` carries the API server's Status (`code`, `reason`, `message`, `details`), with the
subclasses `NotFound` (404), `Conflict` (409: a stale resourceVersion or AlreadyExists), `Gone`
(410: a resourceVersion or continue token too old — list again, then watch from the list's
version; raised both for a 410 reply and for a watch's ERROR event with code 410) and
`Unreachable` (no connection, a timeout, a stream cut). A watch whose connection stays silent
longer than `read_timeout` raises `Unreachable`: with `allowWatchBookmarks` (always asked for)
the server sends a BOOKMARK about once a minute, so a silent connection is a dead one.

Invariants: one `httpx.Client` (a pool of kept-alive connections) per `KubeClient` and thread (calls
may come from several threads; each watch holds one connection until it ends or the iterator is closed); a token file
is read again whenever it changes on disk (rotated service-account tokens); request and reply
bodies are JSON, objects are plain dicts (`JSON`).
"""

from __future__ import annotations

import builtins
import json
import ssl
import threading
import weakref
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Literal, NoReturn, cast

import httpx

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
PatchKind = Literal["merge", "strategic", "json"]
WatchEvent = tuple[str, JSON]

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",  # JSON is YAML: the manifest is sent as JSON
}


class _ThreadClient:
    """One thread's httpx client, held by that thread only (its end closes the client)."""

    __slots__ = ("__weakref__", "client")

    def __init__(self, client: httpx.Client) -> None:
        self.client = client


class KubeClient:
    """Requests to one API server as one identity; see the module docstring for the API."""

    def __init__(
        self,
        config: KubeConfig,
        *,
        timeout: float = 30.0,
        max_connections: int = 100,
        user_agent: str = "caldera",
    ) -> None:
        self.config = config
        self.server = config.server
        self._timeout = timeout
        self._token = BearerToken(config)
        verify: ssl.SSLContext | bool = ssl_context(config) if config.server.startswith("https://") else False
        self._extensions = {"sni_hostname": config.tls_server_name} if config.tls_server_name else None
        self._client_options: dict[str, object] = {
            "base_url": config.server,
            "verify": verify,
            "timeout": timeout,
            "headers": {"User-Agent": user_agent, "Accept": "application/json"},
            "limits": httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        }
        self._local = threading.local()
        self._clients: weakref.WeakSet[httpx.Client] = weakref.WeakSet()
        self._closed = False
        self.requests: Counter[str] = Counter()  # "VERB resource[/subresource]" → requests sent (watches not)

    @property
    def _http(self) -> httpx.Client:
        """This thread's connection pool: httpx's pool takes one lock per request and per response, which
        dozens of writer threads sharing one pool spend their time waiting for (a client per thread does not)."""
        holder: _ThreadClient | None = getattr(self._local, "holder", None)
        if holder is None:
            if self._closed:
                raise Unreachable(f"{self.server}: the client is closed")
            holder = _ThreadClient(httpx.Client(**self._client_options))  # type: ignore[arg-type]
            weakref.finalize(holder, holder.client.close)  # the thread ended: its connections are closed
            self._local.holder = holder
            self._clients.add(holder.client)
        return holder.client

    def close(self) -> None:
        self._closed = True
        for client in list(self._clients):
            client.close()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ reads

    def get(self, path: str, **params: str | int | bool) -> JSON:
        return self._request("GET", path, params=params)

    def get_text(self, path: str, **params: str | int | bool) -> str:
        """GET a plain-text endpoint: /readyz, /livez, a pod's log (pods/NAME/log)."""
        return self._send("GET", path, params=params).text

    def stream_text(
        self, path: str, params: Mapping[str, str | int | bool] | None = None, *, read_timeout: float | None = None
    ) -> Iterator[str]:
        """GET a plain-text stream chunk by chunk until the server ends it (a followed log: pods/NAME/log?follow=true).

        `read_timeout` None waits for the next chunk as long as it takes (a quiet log is not a dead one)."""
        query = {k: query_value(v) for k, v in (params or {}).items()}
        timeout = httpx.Timeout(self._timeout, read=read_timeout)
        try:
            with self._http.stream(
                "GET", path, params=query, headers=self._token.headers(), timeout=timeout, extensions=self._extensions
            ) as reply:
                if reply.status_code >= 400:
                    reply.read()
                    _raise(reply)
                yield from reply.iter_text()
        except httpx.HTTPError as e:
            self._unreachable(e, f"GET {path}")

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
    ) -> tuple[builtins.list[JSON], str]:
        """Every item of a collection, page by page, and the resourceVersion to watch from.

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
        timeout = httpx.Timeout(self._timeout, read=read_timeout)
        try:
            with self._http.stream(
                "GET",
                path,
                params=params,
                headers=self._token.headers(),
                timeout=timeout,
                extensions=self._extensions,
            ) as reply:
                if reply.status_code >= 400:
                    reply.read()
                    _raise(reply)
                for line in reply.iter_lines():
                    if line.strip():
                        yield _watch_event(line)
        except httpx.HTTPError as e:
            self._unreachable(e, f"watch {path}")

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
        if not reply.content:
            return {}
        try:
            return cast(JSON, reply.json())
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
    ) -> httpx.Response:
        headers = self._token.headers()
        if content is not None:
            headers["Content-Type"] = content_type
        self.requests[f"{method} {request_kind(path)}"] += 1  # a lost count under a thread race is harmless
        try:
            reply = self._http.request(
                method,
                path,
                params={k: query_value(v) for k, v in (params or {}).items()},
                content=content,
                headers=headers,
                extensions=self._extensions,
            )
        except httpx.HTTPError as e:
            self._unreachable(e, f"{method} {path}")
        if reply.status_code >= 400:
            _raise(reply)
        return reply

    def _unreachable(self, e: httpx.HTTPError, what: str) -> NoReturn:
        if isinstance(e, httpx.TimeoutException):
            raise Unreachable(f"{self.server}: {what}: no answer in time ({type(e).__name__})") from None
        raise Unreachable(f"{self.server}: {what}: {type(e).__name__}: {e}") from None


def _watch_event(line: str) -> WatchEvent:
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


def _raise(reply: httpx.Response) -> NoReturn:
    try:
        status = reply.json()
    except ValueError:
        status = None
    if not isinstance(status, dict):
        status = {"message": reply.text[:500] or reply.reason_phrase}
    raise_status(status, reply.status_code)
