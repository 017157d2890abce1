"""One real control plane (etcd, kube-apiserver, kube-controller-manager, KWOK) for this package's tests,
stopped when the package is done (not at the end of the whole session).

Tests marked `kube` use it; `make test` builds the tools first (make kube-tools). Locally,
`pytest -m 'not kube'` leaves them out. A missing tool is an error, not a skip: CI must run them.
"""

from __future__ import annotations

import itertools

import pytest

from caldera.testing.kube import ControlPlane, install_volcano_crds, running_cluster
from caldera.testing.kube.calderactl import start_caldera

from .volcanojobs import labelled_nodes

_names = itertools.count()


@pytest.fixture(scope="package")
def plane() -> ControlPlane:
    with running_cluster() as plane:
        yield plane


@pytest.fixture
def namespace(plane, request) -> str:
    """A fresh namespace for one test (deleted afterwards, with what it holds; its pods at once)."""
    name = f"t{next(_names)}-{request.node.name.lower().replace('_', '-')}"[:60].rstrip("-[]")
    name = "".join(c if c.isalnum() or c == "-" else "-" for c in name)
    plane.create_namespace(name)
    yield name
    # Its pods first, at once: a pod still running on a node its test has deleted has no kubelet left to end it,
    # and would keep the namespace Terminating (and in every later controller's lists) for ever.
    plane.kube.delete_collection(f"/api/v1/namespaces/{name}/pods", grace_period_seconds=0)
    plane.kube.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture(scope="module")
def caldera(plane):
    """One `caldera controller` process per test module that asks for it, on Volcano's own CRDs."""
    install_volcano_crds(plane)
    process = start_caldera(plane)
    yield process
    plane.stop_process("caldera-controller")


@pytest.fixture
def nodes(plane, request):
    """Fake nodes of a label of the test's own (a module may define its own instead)."""
    yield from labelled_nodes(plane, request)
