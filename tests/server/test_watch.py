"""Watching over real HTTP: a real embedded cluster (real store, real processes) behind the real server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from caldera.client import Client
from caldera.client.http import event_version, initial_events_end
from caldera.server import create_app
from caldera.system.api import Expired
from caldera.system.daemon import EmbeddedCluster
from caldera.testing.waiting import wait_until

from .helpers import AUTH, TOKEN, LiveServer, serve


def job(name: str, command: list[str]) -> dict[str, Any]:
    container = {"name": "main", "command": command, "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
    task = {
        "name": "worker",
        "replicas": 1,
        "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
    }
    spec = {"minAvailable": 1, "tasks": [task]}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    c = EmbeddedCluster(tmp_path / "caldera", nodes=1, cpus_per_node="2", memory_per_node="4Gi", grace=2.0)
    c.start()
    try:
        yield c
    finally:
        c.shutdown(stop_pods=True)


@pytest.fixture
def live(cluster: EmbeddedCluster) -> Iterator[LiveServer]:
    with serve(create_app(cluster, TOKEN)) as server:
        yield server


@pytest.fixture
def client(live: LiveServer) -> Iterator[Client]:
    with Client(live.url, TOKEN, timeout=30) as c:
        yield c


def phase_of(event: dict[str, Any]) -> str:
    return str(((event["object"].get("status") or {}).get("state") or {}).get("phase"))


def test_a_job_watched_from_now_on(client: Client, cluster: EmbeddedCluster) -> None:
    cluster.apply(job("before", ["sh", "-c", "echo early"]))
    wait_until(lambda: cluster.store.get("Job", "default", "before"), timeout=60, what="the job to be stored")
    events = client.watch(("Job",), "default")
    first = next(events)
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "before"
    assert first["object"]["kind"] == "Job"
    assert initial_events_end(next(events)), "the initial objects end with a bookmark"
    cluster.apply(job("watched", ["sh", "-c", "echo hello"]))
    seen: list[tuple[str, str]] = []
    for event in events:
        if event["object"]["metadata"]["name"] != "watched":
            continue
        seen.append((event["type"], phase_of(event)))
        if phase_of(event) == "Completed":
            break
    events.close()
    # As stored: created and scheduled within one turn of the daemon's loop, it is first seen Running.
    assert seen[0] == ("ADDED", "Running")
    assert seen[1:] and all(t == "MODIFIED" for t, _ in seen[1:]) and seen[-1][1] == "Completed"


def test_from_a_version_only_what_came_after_then_the_delete(client: Client, cluster: EmbeddedCluster) -> None:
    cluster.apply(job("old", ["sh", "-c", "echo old"]))
    # The call returns once the loop decided; the store has it at the end of that turn.
    wait_until(lambda: cluster.store.get("Pod", "default", "old-worker-0"), timeout=60, what="the pod to be stored")
    snapshot = client.changes(("Job", "Pod"))
    version = int(snapshot["resourceVersion"])
    assert {e["object"]["kind"] for e in snapshot["events"]} == {"Job", "Pod"}
    cluster.delete_job("default", "old")
    deleted: list[dict[str, Any]] = []
    for event in client.watch(("Job",), since=version, timeout=30):
        assert event_version(event) > version
        if event["type"] == "DELETED":
            deleted.append(event)
            break
    assert deleted[0]["object"]["kind"] == "Job" and deleted[0]["object"]["metadata"]["name"] == "old"


def test_the_stream_is_json_lines_and_ends_at_its_timeout(live: LiveServer, cluster: EmbeddedCluster) -> None:
    with httpx.Client(base_url=live.url, headers=AUTH, timeout=30) as http:
        r = http.get("/api/v1/watch/nodes", params={"timeoutSeconds": 1})
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
        lines = [json.loads(line) for line in r.text.splitlines()]
    assert [(e["type"], e["object"]["kind"], e["object"]["metadata"]["name"]) for e in lines] == [
        ("ADDED", "Node", "node-0")
    ]
    assert set(lines[0]["object"]) >= {"allocatable", "allocated", "gpus", "pods"}


def test_nodes_change_as_pods_take_them(client: Client, cluster: EmbeddedCluster) -> None:
    version = int(client.changes(("Node",))["resourceVersion"])
    cluster.apply(job("user", ["sh", "-c", "echo using"]))
    for event in client.watch(("Node",), since=version, timeout=30):
        if event["object"]["pods"] == 1:
            assert event["type"] == "MODIFIED" and event["object"]["allocated"]["cpu"] == "100m"
            break
    else:
        pytest.fail("no node change showed the pod")


def test_a_version_older_than_the_log_is_410(client: Client, live: LiveServer, cluster: EmbeddedCluster) -> None:
    cluster.apply(job("churn", ["sh", "-c", "echo churn"]))
    cluster.store.compact(keep=1)
    with pytest.raises(Expired, match="too old"):
        next(client.watch(("Job",), since=1))
    with httpx.Client(base_url=live.url, headers=AUTH, timeout=30) as http:
        r = http.get("/apis/batch.volcano.sh/v1alpha1/watch/jobs", params={"resourceVersion": 1})
    assert r.status_code == 410 and r.json()["reason"] == "Expired"


@pytest.mark.parametrize(
    ("path", "params", "where"),
    [
        pytest.param("/api/v1/watch", {"kind": "Secret"}, "Secret", id="unknown-kind"),
        pytest.param("/api/v1/watch/pods", {"resourceVersion": "-3"}, "resourceVersion", id="negative-version"),
        pytest.param("/api/v1/watch/pods", {"timeoutSeconds": "soon"}, "timeoutSeconds", id="bad-timeout"),
    ],
)
def test_bad_parameters_are_one_line_422(live: LiveServer, path: str, params: dict[str, str], where: str) -> None:
    with httpx.Client(base_url=live.url, headers=AUTH, timeout=30) as http:
        r = http.get(path, params=params)
    assert r.status_code == 422 and where in r.json()["error"]


def test_no_token_no_watch(live: LiveServer) -> None:
    with httpx.Client(base_url=live.url, timeout=30) as http:
        assert http.get("/api/v1/watch/pods").status_code == 401


def test_shutdown_ends_the_streams(cluster: EmbeddedCluster) -> None:
    stops: list[bool] = []
    with serve(create_app(cluster, TOKEN, on_shutdown=stops.append)) as live, Client(live.url, TOKEN) as client:
        events = client.watch(("Pod",))
        assert initial_events_end(next(events))
        client.shutdown(stop_pods=False)
        assert list(events) == [] and stops == [False]  # the stream ended: the server can stop at once
