"""POST .../jobs/{name}/scale over real HTTP, and the client's `scale_job`, against the verbs' fake."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from caldera.client import Client
from caldera.core.errors import ValidationError
from caldera.system.api import NotFound
from cli_verbs.fake_daemon import VerbsFake

from .conftest import Swappable
from .helpers import AUTH, HTTP_TIMEOUT, JOBS, TOKEN, LiveServer, job_manifest

SCALE = f"{JOBS}/namespaces/default/jobs/train/scale"


@pytest.fixture
def fake(tmp_path: Path, shared: tuple[Swappable, LiveServer]) -> VerbsFake:
    cluster = VerbsFake(tmp_path / "pods")
    manifest = job_manifest(workers=2)
    manifest["metadata"] = {"name": "train", "annotations": {"caldera.dev/elastic-max-worker": "4"}}
    manifest["spec"]["tasks"][1]["minAvailable"] = 1  # type: ignore[index]
    cluster.apply(manifest)
    shared[0].target = cluster
    return cluster


@pytest.fixture
def client(fake: VerbsFake, shared: tuple[Swappable, LiveServer]) -> Iterator[Client]:
    with Client(shared[1].url, TOKEN) as c:
        yield c


def test_scale_returns_the_summary(client: Client, fake: VerbsFake) -> None:
    summary = client.scale_job("default", "train", 3)
    assert [p["name"] for p in summary["pods"] if p["task"] == "worker"] == [f"train-worker-{i}" for i in range(3)]
    assert fake.scales == [("default", "train", 3, "worker")]


def test_scale_errors_come_back_as_they_were_raised(client: Client, fake: VerbsFake) -> None:
    with pytest.raises(NotFound, match="job default/nope not found"):
        client.scale_job("default", "nope", 2)
    with pytest.raises(ValidationError) as e:
        client.scale_job("default", "train", 5, task="worker")
    assert e.value.errors[0].path == "replicas" and "outside task worker's range 1:4" in e.value.errors[0].rule
    assert fake.scales == []


@pytest.mark.parametrize(
    "body",
    [pytest.param({}, id="no-replicas"), pytest.param({"replicas": "many"}, id="not-a-number")],
)
def test_a_bad_body_is_422(shared: tuple[Swappable, LiveServer], fake: VerbsFake, body: dict[str, object]) -> None:
    with httpx.Client(base_url=shared[1].url, headers=AUTH, timeout=HTTP_TIMEOUT) as http:
        r = http.post(SCALE, json=body)
    assert r.status_code == 422 and "replicas" in r.json()["error"]
