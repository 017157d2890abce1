"""One real control plane (etcd, kube-apiserver, kube-controller-manager, KWOK) for this package's tests,
stopped when the package is done (not at the end of the whole session).

Tests marked `kube` use it; `make test` builds the tools first (make kube-tools). Locally,
`pytest -m 'not kube'` leaves them out. A missing tool is an error, not a skip: CI must run them.
"""

from __future__ import annotations

import itertools

import pytest

from caldera.testing.kube import ControlPlane, running_cluster

_names = itertools.count()


@pytest.fixture(scope="package")
def plane() -> ControlPlane:
    with running_cluster() as plane:
        yield plane


@pytest.fixture
def namespace(plane, request) -> str:
    """A fresh namespace for one test (deleted afterwards, with what it holds)."""
    name = f"t{next(_names)}-{request.node.name.lower().replace('_', '-')}"[:60].rstrip("-[]")
    name = "".join(c if c.isalnum() or c == "-" else "-" for c in name)
    plane.create_namespace(name)
    yield name
    plane.kube.delete(f"/api/v1/namespaces/{name}")
