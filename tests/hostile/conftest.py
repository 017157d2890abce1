"""A real embedded cluster behind real HTTP, shared by the hostile-input tests (each leaves its state unchanged)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from caldera.server import create_app
from caldera.system.daemon import EmbeddedCluster
from server.helpers import AUTH, TOKEN, LiveServer, serve


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    home: Path = tmp_path_factory.mktemp("hostile") / "home"
    c = EmbeddedCluster(home, nodes=1, cpus_per_node="2", memory_per_node="4Gi", grace=2.0)
    c.start()
    try:
        yield c
    finally:
        c.shutdown(stop_pods=True)


@pytest.fixture(scope="module")
def live(cluster: EmbeddedCluster) -> Iterator[LiveServer]:
    with serve(create_app(cluster, TOKEN)) as server:
        yield server


@pytest.fixture
def api(live: LiveServer, cluster: EmbeddedCluster) -> Iterator[httpx.Client]:
    """A client; after the test, the daemon still answers and its state has not moved."""
    before = cluster.store.latest()
    with httpx.Client(base_url=live.url, headers=AUTH, timeout=30) as client:
        yield client
        assert client.get("/info").status_code == 200, "the daemon should still answer"
    assert cluster.store.latest() == before, "a refused request changed the state"
