"""The typed HTTP client of the daemon's REST API: `ClusterAPI` over the wire, plus log streaming.

Every method mirrors the `ClusterAPI` method of the same name, so the CLI cannot tell
a `Client` from an in-process cluster; `stream_log` and `watch` add the streams. Errors come back as the CalderaError the
server raised (NotFound, Conflict, ValidationError, or a plain CalderaError), built
from the server's JSON body; a 401 says the token is wrong; a daemon that cannot be
reached is a CalderaError naming the URL. No httpx exception leaves this module.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, NoReturn, cast
from urllib.parse import quote

import httpx

from caldera.core.errors import CalderaError, FieldError, ValidationError
from caldera.core.kubeflow import as_volcano
from caldera.system.api import JSON, Conflict, Expired, NotFound

JOBS = "/apis/batch.volcano.sh/v1alpha1"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
CORE = "/api/v1"
UNAUTHORISED = "not authorised: wrong or missing token"
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
ENDED = ("Completed", "Failed", "Terminated", "Aborted")  # the phases a job stays in


def _seg(value: str) -> str:
    return quote(value, safe="")


class Client:
    """`ClusterAPI` over HTTP. `http` lets tests hand in their own httpx.Client (e.g. an ASGI one)."""

    def __init__(self, url: str, token: str, timeout: float = 30.0, *, http: httpx.Client | None = None) -> None:
        self.url = url.rstrip("/")
        self._timeout = timeout
        self._headers = {"Authorization": f"Bearer {token}"}
        self._http = http or httpx.Client(timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ writes

    def apply(self, manifest: JSON, submit_dir: str | None = None) -> JSON:
        """Create or update the object; a Kubeflow training job is sent as the Volcano Job it runs as."""
        manifest = as_volcano(manifest)
        params = {"submitDir": submit_dir} if submit_dir else None
        return self._json("POST", _collection(manifest), json=manifest, params=params)

    def delete_job(self, namespace: str, name: str) -> None:
        self._json("DELETE", f"{JOBS}/namespaces/{_seg(namespace)}/jobs/{_seg(name)}")

    def command(self, namespace: str, name: str, action: str) -> None:
        self._json("POST", f"{JOBS}/namespaces/{_seg(namespace)}/jobs/{_seg(name)}/commands", json={"action": action})

    def scale_job(self, namespace: str, name: str, replicas: int, task: str | None = None) -> JSON:
        path = f"{JOBS}/namespaces/{_seg(namespace)}/jobs/{_seg(name)}/scale"
        return self._json("POST", path, json={"replicas": replicas, "task": task})

    def set_queue_state(self, name: str, state: str) -> JSON:
        return self._json("PUT", f"{QUEUES}/{_seg(name)}/state", json={"state": state})

    def delete_queue(self, name: str) -> None:
        self._json("DELETE", f"{QUEUES}/{_seg(name)}")

    def shutdown(self, stop_pods: bool = True) -> None:
        self._json("POST", "/shutdown", params={"stopPods": "true" if stop_pods else "false"})

    # ------------------------------------------------------------ reads

    def list_jobs(self, namespace: str | None = None) -> list[JSON]:
        path = f"{JOBS}/jobs" if namespace is None else f"{JOBS}/namespaces/{_seg(namespace)}/jobs"
        return _items(self._json("GET", path))

    def get_job(self, namespace: str, name: str) -> JSON:
        return self._json("GET", f"{JOBS}/namespaces/{_seg(namespace)}/jobs/{_seg(name)}")

    def describe_job(self, namespace: str, name: str) -> JSON:
        return self._json("GET", f"{JOBS}/namespaces/{_seg(namespace)}/jobs/{_seg(name)}/describe")

    def explain_job(self, namespace: str, name: str) -> JSON:
        return self._json("GET", f"{JOBS}/namespaces/{_seg(namespace)}/jobs/{_seg(name)}/explain")

    def list_queues(self) -> list[JSON]:
        return _items(self._json("GET", QUEUES))

    def get_queue(self, name: str) -> JSON:
        return self._json("GET", f"{QUEUES}/{_seg(name)}")

    def list_nodes(self) -> list[JSON]:
        return _items(self._json("GET", f"{CORE}/nodes"))

    def patch_node(
        self, name: str, labels: Mapping[str, str | None] | None = None, taints: list[JSON] | None = None
    ) -> JSON:
        patch: JSON = {}
        if labels is not None:
            patch["metadata"] = {"labels": dict(labels)}
        if taints is not None:
            patch["spec"] = {"taints": taints}
        return self._json("PATCH", f"{CORE}/nodes/{_seg(name)}", json=patch)

    def list_priority_classes(self) -> list[JSON]:
        return _items(self._json("GET", PRIORITY_CLASSES))

    def events(self, namespace: str | None = None, objects: tuple[str, ...] = (), since: int = 0) -> list[JSON]:
        path = f"{CORE}/events" if namespace is None else f"{CORE}/namespaces/{_seg(namespace)}/events"
        params: list[tuple[str, str | int]] = [("object", o) for o in objects]
        if since:
            params.append(("since", since))
        return _items(self._json("GET", path, params=params))

    def changes(
        self, kinds: tuple[str, ...], namespace: str | None = None, since: int | None = None, timeout: float = 0.0
    ) -> JSON:
        """One watch batch: the events of a watch that ends after `timeout` seconds (whole seconds, rounded up)."""
        events = []
        version = since or 0
        for event in self.watch(kinds, namespace, since, timeout=math.ceil(max(0.0, timeout))):
            version = max(version, event_version(event))
            if event["type"] != "BOOKMARK":
                events.append(event)
        return {"resourceVersion": version, "events": events}

    def watch(
        self,
        kinds: tuple[str, ...] = (),
        namespace: str | None = None,
        since: int | None = None,
        timeout: float | None = None,
    ) -> Iterator[JSON]:
        """Watch events {"type", "object"} as they happen, until `timeout` seconds (None: until the caller stops).

        `since` None: first every current object as ADDED, then a BOOKMARK (the end of those,
        see `initial_events_end`), then the changes; else the changes after that version.
        Raises Expired if `since` is older than the daemon's change log keeps."""
        params: list[tuple[str, str | int | float | bool | None]] = [("kind", k) for k in kinds]
        if namespace is not None:
            params.append(("namespace", namespace))
        if since is not None:
            params.append(("resourceVersion", since))
        if timeout is not None:
            params.append(("timeoutSeconds", math.ceil(timeout)))
        params.append(("allowWatchBookmarks", "true"))
        url = f"{self.url}{CORE}/watch"
        try:
            with self._http.stream(
                "GET", url, params=params, headers=self._headers, timeout=httpx.Timeout(self._timeout, read=None)
            ) as r:
                if r.status_code >= 400:
                    r.read()
                    _raise(r)
                for line in r.iter_lines():
                    if line.strip():
                        yield _watch_event(line)
        except httpx.HTTPError as e:
            self._unreachable(e)

    def overview(self) -> JSON:
        return self._json("GET", f"{CORE}/overview")

    def allocations(self, node: str | None = None, pods_up_to: int | None = None) -> JSON:
        given = {"node": node, "podsUpTo": pods_up_to}
        return self._json("GET", f"{CORE}/allocations", params={k: v for k, v in given.items() if v is not None})

    def job_table(self) -> JSON:
        return self._json("GET", f"{CORE}/jobtable")

    def timeline(
        self,
        namespace: str | None = None,
        job: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> JSON:
        given = {"namespace": namespace, "job": job, "since": since, "until": until}
        return self._json("GET", f"{CORE}/timeline", params={k: v for k, v in given.items() if v is not None})

    def wait_job(
        self, namespace: str, name: str, *, phases: tuple[str, ...] = ENDED, timeout: float | None = None
    ) -> JSON:
        """Block until the job is in one of `phases` (default: it has ended); its summary then.

        Follows the daemon's watch (nothing is polled). Raises NotFound if there is no such
        job or it is deleted meanwhile, CalderaError if `timeout` seconds pass first."""
        summary = self.get_job(namespace, name)
        if summary.get("phase") in phases:
            return summary
        for event in self.watch(("Job",), namespace, timeout=timeout):
            obj = event.get("object") or {}
            if event["type"] == "BOOKMARK" or (obj.get("metadata") or {}).get("name") != name:
                continue
            if event["type"] == "DELETED":
                raise NotFound(f"job {namespace}/{name} was deleted")
            if ((obj.get("status") or {}).get("state") or {}).get("phase") in phases:
                return self.get_job(namespace, name)
        waited = f"after {timeout:g}s" if timeout is not None else "when the daemon ended the watch"
        raise CalderaError(f"job {namespace}/{name} is not {' or '.join(phases)} {waited}")

    def pod_log(self, namespace: str, pod: str) -> str:
        """The path of the pod's log file on the daemon's machine."""
        body = self._json("GET", f"{CORE}/namespaces/{_seg(namespace)}/pods/{_seg(pod)}/logfile")
        return str(body["path"])

    def info(self) -> JSON:
        return self._json("GET", "/info")

    def stream_log(
        self,
        namespace: str,
        pod: str,
        follow: bool = False,
        tail: int | None = None,
        since_seconds: int | None = None,
        timestamps: bool = False,
        since_time: float | None = None,
        previous: bool = False,
    ) -> Iterator[str]:
        """The pod's log as text chunks; with `follow`, until the pod ends (or the caller stops iterating).

        `since_seconds`: only the lines written in the last N seconds; `since_time`: from that
        moment (seconds since the epoch) on; `timestamps`: each line after the RFC 3339 time it
        was written (Kubernetes' sinceSeconds, sinceTime and timestamps); `previous`: only the
        attempt before the last one (NotFound if there was none)."""
        params: dict[str, str | int] = {"follow": "true" if follow else "false"}
        if previous:
            params["previous"] = "true"
        if tail is not None and tail >= 0:
            params["tailLines"] = tail
        if since_seconds is not None:
            params["sinceSeconds"] = since_seconds
        if since_time is not None:
            params["sinceTime"] = datetime.fromtimestamp(since_time, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        if timestamps:
            params["timestamps"] = "true"
        url = f"{self.url}{CORE}/namespaces/{_seg(namespace)}/pods/{_seg(pod)}/log"
        timeout = httpx.Timeout(self._timeout, read=None if follow else self._timeout)
        try:
            with self._http.stream("GET", url, params=params, headers=self._headers, timeout=timeout) as r:
                if r.status_code >= 400:
                    r.read()
                    _raise(r)
                yield from r.iter_text()
        except httpx.HTTPError as e:
            self._unreachable(e)

    # ------------------------------------------------------------ plumbing

    def _json(self, method: str, path: str, **kwargs: Any) -> JSON:
        try:
            r = self._http.request(method, f"{self.url}{path}", headers=self._headers, **kwargs)
        except httpx.HTTPError as e:
            self._unreachable(e)
        if r.status_code >= 400:
            _raise(r)
        if not r.content:
            return {}
        try:
            return cast(JSON, r.json())
        except ValueError:
            raise CalderaError(f"the daemon at {self.url} sent a reply that is not JSON ({method} {path})") from None

    def _unreachable(self, e: httpx.HTTPError) -> NoReturn:
        if isinstance(e, httpx.TimeoutException):
            raise CalderaError(f"the caldera daemon at {self.url} did not answer in time") from None
        raise CalderaError(
            f"cannot reach the caldera daemon at {self.url}: {e}; is it running? (`caldera up`)"
        ) from None


def _collection(manifest: JSON) -> str:
    """Where a manifest is POSTed, chosen by its apiVersion and kind."""
    api, kind = manifest.get("apiVersion"), manifest.get("kind")
    if (api, kind) == ("batch.volcano.sh/v1alpha1", "Job"):
        meta = manifest.get("metadata")
        namespace = (meta.get("namespace") if isinstance(meta, dict) else None) or "default"
        return f"{JOBS}/namespaces/{_seg(str(namespace))}/jobs"
    if (api, kind) == ("scheduling.volcano.sh/v1beta1", "Queue"):
        return QUEUES
    if (api, kind) == ("scheduling.k8s.io/v1", "PriorityClass"):
        return PRIORITY_CLASSES
    rule = (
        f"cannot apply {api} {kind}: caldera applies Volcano Jobs, Kubeflow training jobs, Queues and PriorityClasses"
    )
    raise ValidationError([FieldError("kind", rule)])


def event_version(event: JSON) -> int:
    """The resourceVersion a watch event is at (0 if it says none)."""
    meta = (event.get("object") or {}).get("metadata") or {}
    try:
        return int(meta.get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def initial_events_end(event: JSON) -> bool:
    """Whether `event` is the BOOKMARK that ends a watch's initial ADDED events."""
    meta = (event.get("object") or {}).get("metadata") or {}
    return event.get("type") == "BOOKMARK" and (meta.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true"


def _watch_event(line: str) -> JSON:
    try:
        event = json.loads(line)
    except ValueError:
        raise CalderaError(f"the daemon sent a watch line that is not JSON: {line[:200]!r}") from None
    if not isinstance(event, dict) or "type" not in event:
        raise CalderaError(f"the daemon sent a watch line that is not an event: {line[:200]!r}")
    if event["type"] == "ERROR":
        status = event.get("object") or {}
        message = str(status.get("message") or "the watch failed")
        raise Expired(message) if status.get("reason") == "Expired" else CalderaError(message)
    return cast(JSON, event)


def _items(body: JSON) -> list[JSON]:
    return list(body.get("items", []))


def _raise(r: httpx.Response) -> NoReturn:
    """The CalderaError the server reported in `r` (a JSON body {"error", "reason", ...})."""
    try:
        body = r.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {}
    message = str(body.get("error") or f"HTTP {r.status_code} from the daemon")
    reason = body.get("reason")
    if r.status_code == 401:
        raise CalderaError(UNAUTHORISED)
    if reason == "NotFound" or (reason is None and r.status_code == 404):
        raise NotFound(message)
    if reason == "Conflict" or (reason is None and r.status_code == 409):
        raise Conflict(message)
    if reason == "Expired" or (reason is None and r.status_code == 410):
        raise Expired(message)
    if reason == "Invalid" and isinstance(body.get("errors"), list):
        errors = [
            FieldError(str(e.get("path", "")), str(e.get("rule", ""))) for e in body["errors"] if isinstance(e, dict)
        ]
        raise ValidationError(errors or [FieldError("", message)], str(body.get("source") or ""))
    if reason == "Invalid" or r.status_code == 422:
        raise ValidationError([FieldError("", message)])
    raise CalderaError(message)
