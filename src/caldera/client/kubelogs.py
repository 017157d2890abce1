"""A pod's log on Kubernetes, as `kubectl logs` reads it: from its node's kubelet, through the API server.

A pod not yet on a node has no log (NotFound); a pod on a KWOK fake node never has one (no container runs
there), which is said in so many words instead of the kubelet's refusal.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NoReturn

from caldera.backends.kube.client import ApiError, KubeClient, KubeError, resource_path
from caldera.client.kubeerrors import errors
from caldera.core.errors import CalderaError
from caldera.system.api import NotFound

KWOK_NODE = "kwok.x-k8s.io/node"


@dataclass(frozen=True, slots=True)
class LogOptions:
    follow: bool = False
    tail: int | None = None
    since_seconds: int | None = None
    timestamps: bool = False
    since_time: float | None = None
    previous: bool = False


def stream_log(kube: KubeClient, namespace: str, pod: str, options: LogOptions) -> Iterator[str]:
    with errors(f"pod {namespace}/{pod}"):
        obj = kube.get(resource_path("v1", "pods", namespace=namespace, name=pod))
    node = (obj.get("spec") or {}).get("nodeName")
    if not node:
        raise NotFound(f"pod {namespace}/{pod} has no log (it has not started)")
    params: dict[str, str | int | bool] = {"follow": options.follow}
    if options.previous:
        params["previous"] = True
    if options.tail is not None and options.tail >= 0:
        params["tailLines"] = options.tail
    if options.since_seconds is not None:
        params["sinceSeconds"] = options.since_seconds
    if options.since_time is not None:
        params["sinceTime"] = datetime.fromtimestamp(options.since_time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if options.timestamps:
        params["timestamps"] = True
    path = resource_path("v1", "pods", namespace=namespace, name=pod, subresource="log")
    try:
        if options.follow:
            yield from kube.stream_text(path, params)
        else:
            yield kube.get_text(path, **params)
    except ApiError as e:
        _no_log(kube, namespace, pod, node, e)


def _no_log(kube: KubeClient, namespace: str, pod: str, node: str, e: ApiError) -> NoReturn:
    where = f"the kubelet of node {node} did not serve it"
    try:
        annotations = kube.get(resource_path("v1", "nodes", name=node))["metadata"].get("annotations") or {}
    except KubeError:
        annotations = {}
    if KWOK_NODE in annotations:
        where = f"node {node} is a KWOK fake node: no container runs there, so there is no log to read"
    raise CalderaError(f"cannot read the log of pod {namespace}/{pod}: {where} ({e.message})") from None
