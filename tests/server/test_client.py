"""The typed client against the real server: ClusterAPI over HTTP, errors rebuilt, logs streamed."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from caldera.client import NOT_RUNNING, Client, connect
from caldera.client import home as client_home
from caldera.core.errors import CalderaError, ValidationError
from caldera.server import home as server_home
from caldera.system.api import ClusterAPI, Conflict, NotFound
from caldera.testing.fake_cluster import FakeCluster

from .helpers import HTTP_TIMEOUT, TOKEN, LiveServer, job_manifest, queue_manifest


@pytest.fixture
def client(live: LiveServer) -> Iterator[Client]:
    with Client(live.url, TOKEN, timeout=HTTP_TIMEOUT) as c:
        yield c


def test_a_client_is_a_cluster_api(client: Client) -> None:
    api: ClusterAPI = client  # checked by mypy on the package; here, that nothing is missing at runtime
    for name in ClusterAPI.__dict__:
        if not name.startswith("_"):
            assert callable(getattr(api, name)), name


def test_writes_and_reads_round_trip(client: Client, fake: FakeCluster) -> None:
    created = client.apply(job_manifest(namespace="team"), submit_dir="/src")
    assert created["metadata"]["namespace"] == "team" and fake.submit_dirs[("team", "train")] == "/src"
    assert [j["name"] for j in client.list_jobs("team")] == ["train"]
    assert [j["name"] for j in client.list_jobs()] == ["train"]
    assert client.list_jobs("default") == []
    assert [p["name"] for p in client.get_job("team", "train")["pods"]] == [
        "train-master-0",
        "train-worker-0",
        "train-worker-1",
    ]
    assert client.describe_job("team", "train")["summary"]["name"] == "train"
    client.command("team", "train", "AbortJob")
    assert fake.commands == [("team", "train", "AbortJob")]
    client.apply(queue_manifest("q", weight=2))
    assert client.get_queue("q")["spec"]["weight"] == 2
    assert client.set_queue_state("q", "Closed")["status"]["state"] == "Closed"
    assert [q["metadata"]["name"] for q in client.list_queues()] == ["default", "q"]
    client.delete_queue("q")
    client.delete_job("team", "train")
    assert fake.jobs == {}
    assert client.list_nodes()[0]["name"] == "node-0"
    fake.add_event("team", "train", "JobPhase", "Running")
    assert [e["reason"] for e in client.events("team", ("train",))] == ["Running"]
    assert client.events("team", since=1) == []
    assert client.info()["nodes"] == 1
    client.shutdown(stop_pods=False)
    assert fake.shutdowns == [False]


def test_errors_come_back_as_the_same_caldera_errors(client: Client, fake: FakeCluster) -> None:
    with pytest.raises(NotFound, match=r"^job default/nope not found$"):
        client.get_job("default", "nope")
    fake.apply(queue_manifest("busy"))
    fake.apply(job_manifest(queue="busy"))
    with pytest.raises(Conflict, match="still has jobs"):
        client.delete_queue("busy")
    with pytest.raises(ValidationError) as e:
        client.apply({**job_manifest("bad"), "spec": {"tasks": []}})
    assert e.value.errors[0].path.startswith("spec.tasks")


def test_a_manifest_of_an_unknown_kind_is_refused_before_sending(client: Client) -> None:
    with pytest.raises(ValidationError, match="kind: cannot apply apps/v1 Deployment"):
        client.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}})


def test_a_wrong_token_says_so(live: LiveServer, fake: FakeCluster) -> None:
    with Client(live.url, "wrong") as c, pytest.raises(CalderaError, match=r"^not authorised: wrong or missing token$"):
        c.list_jobs()


def test_an_unreachable_daemon_is_one_line(tmp_path: Path) -> None:
    with Client("http://127.0.0.1:9", TOKEN, timeout=2) as c:
        with pytest.raises(CalderaError, match=r"cannot reach the caldera daemon at http://127\.0\.0\.1:9"):
            c.info()
        with pytest.raises(CalderaError, match="cannot reach"):
            list(c.stream_log("default", "p"))


def test_pod_log_is_the_path_and_stream_log_follows(client: Client, fake: FakeCluster) -> None:
    fake.apply(job_manifest())
    fake.set_pod("default", "train-master-0", phase="Running")
    path = fake.write_log("default", "train-master-0", "a\nb\n")
    assert client.pod_log("default", "train-master-0") == str(path)
    assert "".join(client.stream_log("default", "train-master-0", tail=1)) == "b\n"
    chunks = client.stream_log("default", "train-master-0", follow=True)
    assert next(chunks) == "a\nb\n"
    fake.write_log("default", "train-master-0", "c\n")
    assert next(chunks) == "c\n"
    fake.set_pod("default", "train-master-0", phase="Failed", exit_code=1)
    assert list(chunks) == []
    with pytest.raises(NotFound):
        list(client.stream_log("default", "nope"))


# ---------------------------------------------------------------- finding the daemon


def test_connect_without_a_daemon(tmp_path: Path) -> None:
    with pytest.raises(CalderaError, match=f"^{NOT_RUNNING}$".replace("`", ".")):
        connect(tmp_path)


def test_connect_with_a_stale_daemon_file(tmp_path: Path) -> None:
    (tmp_path / "daemon.json").write_text(json.dumps({"pid": 2**22 + 12345, "url": "http://127.0.0.1:1"}))
    with pytest.raises(CalderaError, match="not running"):
        connect(tmp_path)


def test_connect_reads_the_daemon_file_and_token(
    tmp_path: Path, live: LiveServer, fake: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "daemon.json").write_text(json.dumps({"pid": os.getpid(), "url": live.url}))
    (tmp_path / "token").write_text(TOKEN + "\n")
    monkeypatch.setenv("CALDERA_HOME", str(tmp_path))
    with connect() as c:
        assert c.info()["nodes"] == 1


def test_connect_without_a_token(tmp_path: Path, live: LiveServer) -> None:
    (tmp_path / "daemon.json").write_text(json.dumps({"pid": os.getpid(), "url": live.url}))
    with pytest.raises(CalderaError, match="cannot read the API token"):
        connect(tmp_path)


def test_server_and_client_agree_on_the_file_names() -> None:
    assert (server_home.DAEMON_FILE, server_home.TOKEN_FILE) == (client_home.DAEMON_FILE, client_home.TOKEN_FILE)
