"""The typed HTTP client of the daemon's REST API: `ClusterAPI` over the wire, plus log streaming.

Every method mirrors the `ClusterAPI` method of the same name, so the CLI cannot tell
a `Client` from an in-process cluster. Errors come back as the CalderaError the
server raised (NotFound, Conflict, ValidationError, or a plain CalderaError), built
from the server's JSON body; a 401 says the token is wrong; a daemon that cannot be
reached is a CalderaError naming the URL. No httpx exception leaves this module.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NoReturn, cast
from urllib.parse import quote

import httpx

from caldera.core.errors import CalderaError, FieldError, ValidationError
from caldera.system.api import JSON, Conflict, NotFound

JOBS = "/apis/batch.volcano.sh/v1alpha1"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
CORE = "/api/v1"
UNAUTHORISED = "not authorised: wrong or missing token"


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
        params = {"submitDir": submit_dir} if submit_dir else None
        return self._json("POST", _collection(manifest), json=manifest, params=params)

    def delete_job(self, namespace: str, name: str) -> None:
        self._json("DELETE", f"{JOBS}/namespaces/{_seg(namespace)}/jobs/{_seg(name)}")

    def command(self, namespace: str, name: str, action: str) -> None:
        self._json("POST", f"{JOBS}/namespaces/{_seg(namespace)}/jobs/{_seg(name)}/commands", json={"action": action})

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

    def list_queues(self) -> list[JSON]:
        return _items(self._json("GET", QUEUES))

    def get_queue(self, name: str) -> JSON:
        return self._json("GET", f"{QUEUES}/{_seg(name)}")

    def list_nodes(self) -> list[JSON]:
        return _items(self._json("GET", f"{CORE}/nodes"))

    def events(self, namespace: str | None = None, objects: tuple[str, ...] = (), since: int = 0) -> list[JSON]:
        path = f"{CORE}/events" if namespace is None else f"{CORE}/namespaces/{_seg(namespace)}/events"
        params: list[tuple[str, str | int]] = [("object", o) for o in objects]
        if since:
            params.append(("since", since))
        return _items(self._json("GET", path, params=params))

    def pod_log(self, namespace: str, pod: str) -> str:
        """The path of the pod's log file on the daemon's machine."""
        body = self._json("GET", f"{CORE}/namespaces/{_seg(namespace)}/pods/{_seg(pod)}/logfile")
        return str(body["path"])

    def info(self) -> JSON:
        return self._json("GET", "/info")

    def stream_log(self, namespace: str, pod: str, follow: bool = False, tail: int | None = None) -> Iterator[str]:
        """The pod's log as text chunks; with `follow`, until the pod ends (or the caller stops iterating)."""
        params: dict[str, str | int] = {"follow": "true" if follow else "false"}
        if tail is not None and tail >= 0:
            params["tailLines"] = tail
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
    rule = f"cannot apply {api} {kind}: caldera applies Volcano Jobs and Queues and PriorityClasses"
    raise ValidationError([FieldError("kind", rule)])


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
    if reason == "Invalid" and isinstance(body.get("errors"), list):
        errors = [
            FieldError(str(e.get("path", "")), str(e.get("rule", ""))) for e in body["errors"] if isinstance(e, dict)
        ]
        raise ValidationError(errors or [FieldError("", message)], str(body.get("source") or ""))
    if reason == "Invalid" or r.status_code == 422:
        raise ValidationError([FieldError("", message)])
    raise CalderaError(message)
