"""One real control plane (etcd, kube-apiserver, kube-controller-manager, KWOK) with caldera's CRDs installed,
for the tests of caldera's API and CLI on Kubernetes; stopped when the package is done.

A package of its own, apart from tests/kube: the CRDs are cluster-wide, and tests there install
Volcano's own under the same names. Tests are marked `kube` (see tests/kube/conftest.py).
"""

from __future__ import annotations

import itertools

import pytest

from caldera.testing.kube import ControlPlane, install_caldera_crds, running_cluster

_names = itertools.count()


@pytest.fixture(scope="package")
def plane() -> ControlPlane:
    with running_cluster() as plane:
        install_caldera_crds(plane)
        # What the controller creates when it starts (none runs here): the queue jobs go to by default.
        queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"}}
        plane.kube.create("/apis/scheduling.volcano.sh/v1beta1/queues", {**queue, "spec": {"weight": 1}})
        yield plane


@pytest.fixture
def namespace(plane, request) -> str:
    """A fresh namespace for one test (deleted afterwards, with what it holds)."""
    name = f"c{next(_names)}-{request.node.name.lower().replace('_', '-')}"[:60].rstrip("-[]")
    name = "".join(c if c.isalnum() or c == "-" else "-" for c in name).rstrip("-")
    plane.create_namespace(name)
    yield name
    plane.kube.delete(f"/api/v1/namespaces/{name}")
