"""Fake nodes played by KWOK: nodes with the capacity, labels and taints a test asks for, whose pods run
for the time their annotations say and then succeed or fail.

`start_kwok(plane)` runs one `kwok` process against the control plane with caldera's stages
(`kwok-stages.yaml`: read it for the pod lifecycle) and manages every node annotated
`kwok.x-k8s.io/node: fake`. `add_nodes(plane, [FakeNode(...)])` creates such nodes (in parallel:
a benchmark makes thousands) and waits until KWOK reports them Ready; `delete_nodes` removes them.
`run_for(seconds, exit_code)` is the annotations that make a pod end; without them it runs until
deleted.

Pod IPs come from 127.64.0.0/10 and nodes say 127.0.0.1: they are data in objects, but should
anything ever dial them, it reaches loopback and nothing else.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources

from caldera.backends.kube.client import JSON, NotFound, resource_path
from caldera.testing.kube.controlplane import ControlPlane
from caldera.testing.kube.process import Process, ProcessError
from caldera.utils.clock import SystemClock

MANAGED_ANNOTATION = "kwok.x-k8s.io/node"
DURATION_ANNOTATION = "caldera.dev/kwok-duration"
EXIT_CODE_ANNOTATION = "caldera.dev/kwok-exit-code"
NODES = resource_path("v1", "nodes")
POD_CIDR = "127.64.0.0/10"


@dataclass(frozen=True, slots=True)
class FakeNode:
    """A node to create: its allocatable resources (Kubernetes quantities), labels and taints."""

    name: str
    cpu: str = "32"
    memory: str = "256Gi"
    gpus: int = 0
    pods: int = 110
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[JSON, ...] = ()  # {"key", "value", "effect"}

    def manifest(self) -> JSON:
        capacity = {"cpu": self.cpu, "memory": self.memory, "pods": str(self.pods)}
        if self.gpus:
            capacity["nvidia.com/gpu"] = str(self.gpus)
        labels = {"kubernetes.io/hostname": self.name, "kubernetes.io/os": "linux", "type": "kwok", **self.labels}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": labels, "annotations": {MANAGED_ANNOTATION: "fake"}},
            "spec": {"taints": [dict(t) for t in self.taints]},
            "status": {"capacity": capacity, "allocatable": dict(capacity)},
        }


def run_for(seconds: float, exit_code: int = 0) -> dict[str, str]:
    """The pod annotations that make KWOK end the pod `seconds` after it runs, with `exit_code`."""
    if seconds < 0 or not math.isfinite(seconds):
        raise ValueError(f"a pod runs for a finite time >= 0, not {seconds}")
    if not 0 <= exit_code <= 255:
        raise ValueError(f"an exit code is 0..255, not {exit_code}")
    return {DURATION_ANNOTATION: f"{int(seconds * 1000)}ms", EXIT_CODE_ANNOTATION: str(exit_code)}


def start_kwok(plane: ControlPlane) -> Process:
    """KWOK with caldera's stages, managing the fake nodes; stopped with the control plane."""
    stages = plane.directory / "kwok-stages.yaml"
    stages.write_text(resources.files("caldera.testing.kube").joinpath("kwok-stages.yaml").read_text())
    return plane.start_process(
        "kwok",
        [
            str(plane.tools.binary("kwok")),
            f"--kubeconfig={plane.kubeconfig}",
            f"--config={stages}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={MANAGED_ANNOTATION}=fake",
            "--node-lease-duration-seconds=0",
            f"--cidr={POD_CIDR}",
            "--node-ip=127.0.0.1",
        ],
    )


def add_nodes(plane: ControlPlane, nodes: Sequence[FakeNode], *, timeout: float = 300.0, parallel: int = 16) -> None:
    """Create `nodes` and wait until KWOK has made every one Ready."""
    kube = plane.kube
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(nodes)))) as pool:
        list(pool.map(lambda node: kube.create(NODES, node.manifest()), nodes))
    wait_ready(plane, [node.name for node in nodes], timeout=timeout)


def wait_ready(plane: ControlPlane, names: Iterable[str], *, timeout: float = 300.0) -> None:
    """Wait until every named node is Ready (KWOK must be running)."""
    wanted = set(names)
    clock = SystemClock()
    deadline = clock.monotonic() + timeout
    while True:
        kwok = plane.processes.get("kwok")
        if kwok is None:
            raise ProcessError("KWOK is not running: start_kwok(plane) first")
        kwok.ensure_running()
        items, _ = plane.kube.list_all(NODES)
        missing = wanted - {n["metadata"]["name"] for n in items if _ready(n)}
        if not missing:
            return
        if clock.monotonic() > deadline:
            raise ProcessError(
                f"{len(missing)} fake nodes not Ready after {timeout:g}s (e.g. {sorted(missing)[:3]}); "
                f"KWOK's log ends with:\n{kwok.log_tail()}"
            )
        clock.sleep(0.2)


def delete_nodes(plane: ControlPlane, names: Iterable[str], *, parallel: int = 16) -> None:
    """Delete the named nodes (those already gone are fine)."""

    def delete(name: str) -> None:
        with contextlib.suppress(NotFound):
            plane.kube.delete(f"{NODES}/{name}")

    names = list(names)
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(names)))) as pool:
        list(pool.map(delete, names))


def _ready(node: JSON) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
