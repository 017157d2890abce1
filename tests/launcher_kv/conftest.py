"""One real etcd server for this package's tests, and the contract's store fixture over both stores."""

from __future__ import annotations

import pytest

from caldera.testing.etcd import running_etcd

from .harness import EtcdStore, MemoryStore, Store


@pytest.fixture(scope="package")
def etcd_server(tmp_path_factory):
    with running_etcd(tmp_path_factory.mktemp("etcd")) as server:
        yield server


@pytest.fixture(params=["memory", "etcd"])
def store(request) -> Store:
    if request.param == "memory":
        made: Store = MemoryStore()
    else:
        made = EtcdStore(request.getfixturevalue("etcd_server"))
    yield made
    made.close()
