"""Fixtures for the REST API, tested over real HTTP: one uvicorn server for the session, in front
of whichever fake cluster the current test made (tests that need their own app serve it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from caldera.server import create_app
from caldera.testing.fake_cluster import FakeCluster

from .helpers import AUTH, HTTP_TIMEOUT, TOKEN, LiveServer, serve


class Swappable:
    """A cluster forwarding every call to the current test's fake."""

    def __init__(self) -> None:
        self.target: object = None

    def __getattr__(self, name: str) -> object:
        return getattr(self.target, name)


@pytest.fixture(scope="session")
def shared() -> Iterator[tuple[Swappable, LiveServer]]:
    proxy = Swappable()
    with serve(create_app(proxy, TOKEN, log_poll=0.01)) as live:  # type: ignore[arg-type]
        yield proxy, live


@pytest.fixture
def fake(tmp_path: Path, shared: tuple[Swappable, LiveServer]) -> FakeCluster:
    cluster = FakeCluster(tmp_path / "pods")
    shared[0].target = cluster
    return cluster


@pytest.fixture
def live(fake: FakeCluster, shared: tuple[Swappable, LiveServer]) -> LiveServer:
    return shared[1]


@pytest.fixture
def api(live: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.url, headers=AUTH, timeout=HTTP_TIMEOUT) as client:
        yield client


@pytest.fixture
def anonymous(live: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.url, timeout=HTTP_TIMEOUT) as client:
        yield client
