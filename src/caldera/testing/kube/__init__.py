"""A real Kubernetes control plane for tests and benchmarks: etcd, kube-apiserver, kube-controller-manager,
KWOK's fake nodes, and the peers caldera is measured beside (kube-scheduler, Volcano).

The binaries are built by `make kube-tools` (tools/kube/build.sh) from the Go module proxy. A
test module (or session) starts one control plane and shares it; each test makes its own nodes
(with labels its pods select) and namespace:

    @pytest.fixture(scope="module")
    def plane():
        with running_cluster() as plane:          # etcd + apiserver + controller-manager + KWOK
            yield plane

    def test_x(plane):
        add_nodes(plane, [FakeNode(f"x-{i}", gpus=1, labels={"test": "x"}) for i in range(4)])
        plane.create_namespace("x")
        plane.kube.create(resource_path("v1", "pods", namespace="x"), pod)   # caldera.backends.kube.client
        ...

`plane.kubeconfig` is a kubeconfig file for other programs (`plane.kubectl(...)` runs the built
kubectl). Pods on fake nodes run until deleted, or for `run_for(seconds, exit_code)` (annotations).
Everything stops and its files are removed when the block ends, also when a test failed.
Details: docs/kubernetes-harness.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from caldera.testing.kube.controlplane import ControlPlane, ControlPlaneError
from caldera.testing.kube.crds import install_caldera_crds
from caldera.testing.kube.kwok import (
    DURATION_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    FakeNode,
    add_nodes,
    delete_nodes,
    run_for,
    start_kwok,
    wait_ready,
)
from caldera.testing.kube.peers import (
    install_volcano_crds,
    start_kube_scheduler,
    start_volcano,
    volcano_job_defaults,
)
from caldera.testing.kube.process import Process, ProcessError
from caldera.testing.kube.tools import KubeTools, ToolsMissing, find_tools

__all__ = [
    "DURATION_ANNOTATION",
    "EXIT_CODE_ANNOTATION",
    "ControlPlane",
    "ControlPlaneError",
    "FakeNode",
    "KubeTools",
    "Process",
    "ProcessError",
    "ToolsMissing",
    "add_nodes",
    "delete_nodes",
    "find_tools",
    "install_caldera_crds",
    "install_volcano_crds",
    "run_for",
    "running_cluster",
    "start_kube_scheduler",
    "start_kwok",
    "start_volcano",
    "volcano_job_defaults",
    "wait_ready",
]


@contextmanager
def running_cluster(
    directory: Path | None = None,
    *,
    tools: KubeTools | None = None,
    controller_manager: bool = True,
    kwok: bool = True,
    apiserver_args: tuple[str, ...] = (),
) -> Iterator[ControlPlane]:
    """A started control plane (with kube-controller-manager and KWOK unless told otherwise) for the block."""
    plane = ControlPlane(
        tools or find_tools(), directory, controller_manager=controller_manager, apiserver_args=apiserver_args
    )
    with plane:
        if kwok:
            start_kwok(plane)
        yield plane
