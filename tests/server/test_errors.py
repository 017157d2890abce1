"""Errors reach the client as one JSON line with the right status; never a traceback."""

from __future__ import annotations

import logging

import httpx
import pytest

from caldera.core.errors import CalderaError
from caldera.server import create_app
from caldera.testing.fake_cluster import FakeCluster

from .helpers import AUTH, HTTP_TIMEOUT, JOBS, QUEUES, TOKEN, job_manifest, queue_manifest, serve


class Conflict(CalderaError):
    """A store's own Conflict, not the API's: mapped by name."""


@pytest.mark.parametrize(
    ("manifest", "path_in_error"),
    [
        pytest.param({**job_manifest(), "spec": {"tasks": []}}, "spec.tasks", id="no-tasks"),
        pytest.param(job_manifest(namespace="other"), "metadata.namespace", id="other-namespace"),
        pytest.param(queue_manifest("q"), "kind", id="queue-on-jobs-path"),
        pytest.param({**job_manifest(), "apiVersion": "batch/v1"}, "apiVersion", id="other-api"),
        pytest.param(job_manifest(queue="nope"), "spec.queue", id="unknown-queue"),
    ],
)
def test_invalid_jobs_are_422_with_field_paths_and_nothing_stored(
    api: httpx.Client, fake: FakeCluster, manifest: dict[str, object], path_in_error: str
) -> None:
    r = api.post(f"{JOBS}/namespaces/default/jobs", json=manifest)
    assert r.status_code == 422
    body = r.json()
    assert body["reason"] == "Invalid" and "\n" not in body["error"]
    assert any(e["path"].startswith(path_in_error) for e in body["errors"])
    assert fake.jobs == {}


def test_a_closed_queue_takes_no_job(api: httpx.Client, fake: FakeCluster) -> None:
    fake.set_queue_state("default", "Closed")
    r = api.post(f"{JOBS}/namespaces/default/jobs", json=job_manifest())
    assert r.status_code == 422 and "Closed" in r.json()["error"]


def test_a_body_that_is_not_a_mapping_is_422(api: httpx.Client, fake: FakeCluster) -> None:
    r = api.post(QUEUES, json=["not", "a", "mapping"])
    assert r.status_code == 422 and r.json()["reason"] == "Invalid"


def test_unknown_route_and_method(api: httpx.Client, fake: FakeCluster) -> None:
    r = api.get("/apis/nothing/here")
    assert r.status_code == 404 and r.json() == {
        "error": "no such resource: GET /apis/nothing/here",
        "reason": "NotFound",
    }
    r = api.patch("/info")
    assert r.status_code == 405 and r.json()["reason"] == "MethodNotAllowed"


class Broken(FakeCluster):
    def list_nodes(self) -> list[dict[str, object]]:
        raise RuntimeError("disk on fire\n  at line 3")

    def list_queues(self) -> list[dict[str, object]]:
        raise Conflict("queue store was modified")

    def info(self) -> dict[str, object]:
        raise CalderaError("the clock is wrong")


def test_unexpected_errors_are_500_in_one_line_and_logged(tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    with (
        serve(create_app(Broken(tmp_path), TOKEN)) as live,
        httpx.Client(base_url=live.url, headers=AUTH, timeout=HTTP_TIMEOUT) as api,
    ):
        with caplog.at_level(logging.ERROR, logger="caldera.server"):
            r = api.get("/api/v1/nodes")
        assert r.status_code == 500
        assert r.json() == {"error": "internal error: RuntimeError: disk on fire at line 3", "reason": "InternalError"}
        assert "Traceback" not in r.text
        assert any("GET /api/v1/nodes failed" in rec.getMessage() and rec.exc_info for rec in caplog.records)
        assert api.get("/api/v1/events").status_code == 200  # the server lives on


def test_caldera_errors_map_by_class_name(tmp_path) -> None:
    with (
        serve(create_app(Broken(tmp_path), TOKEN)) as live,
        httpx.Client(base_url=live.url, headers=AUTH, timeout=HTTP_TIMEOUT) as api,
    ):
        r = api.get(QUEUES)
        assert r.status_code == 409 and r.json() == {"error": "queue store was modified", "reason": "Conflict"}
        r = api.get("/info")
        assert r.status_code == 400 and r.json() == {"error": "the clock is wrong", "reason": "BadRequest"}
