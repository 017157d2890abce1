"""Each route: what it does to the cluster, what it answers, and its status codes."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from caldera.testing.fake_cluster import FakeCluster

from .helpers import JOBS, QUEUES, job_manifest, queue_manifest

JOB = f"{JOBS}/namespaces/default/jobs/train"
SUMMARY_FIELDS = {"name", "namespace", "queue", "phase", "retryCount", "minAvailable", "pods"}
POD_FIELDS = {"name", "task", "index", "node", "phase", "exitCode", "restarts", "address"}


def test_apply_a_job_201_in_the_path_namespace_with_the_submit_dir(api: httpx.Client, fake: FakeCluster) -> None:
    r = api.post(f"{JOBS}/namespaces/team-a/jobs", json=job_manifest(), params={"submitDir": "/home/me/proj"})
    assert r.status_code == 201
    assert r.json()["metadata"]["namespace"] == "team-a"
    assert fake.submit_dirs[("team-a", "train")] == "/home/me/proj"


def test_list_get_describe_jobs(api: httpx.Client, fake: FakeCluster) -> None:
    fake.apply(job_manifest("a"))
    fake.apply(job_manifest("b", namespace="other"))
    listed = api.get(f"{JOBS}/namespaces/default/jobs").json()
    assert listed["kind"] == "JobList" and [j["name"] for j in listed["items"]] == ["a"]
    assert {j["name"] for j in api.get(f"{JOBS}/jobs").json()["items"]} == {"a", "b"}
    summary = api.get(f"{JOBS}/namespaces/default/jobs/a").json()
    assert set(summary) >= SUMMARY_FIELDS and all(set(p) >= POD_FIELDS for p in summary["pods"])
    described = api.get(f"{JOBS}/namespaces/default/jobs/a/describe").json()
    assert {"job", "summary", "podgroup", "events"} <= set(described)


def test_explain_a_job_and_its_waiting_reason(api: httpx.Client, fake: FakeCluster) -> None:
    fake.apply(job_manifest("a"))
    fake.set_waiting("default", "a", "NeverFits", "task worker fits no node", never=True)
    assert api.get(f"{JOBS}/namespaces/default/jobs/a").json()["waiting"] == {
        "reason": "NeverFits",
        "message": "task worker fits no node",
        "never": True,
    }
    explained = api.get(f"{JOBS}/namespaces/default/jobs/a/explain").json()
    assert explained["never"] == ["task worker fits no node"] and "nodeClasses" in explained
    assert api.get(f"{JOBS}/namespaces/default/jobs/nope/explain").status_code == 404


def test_delete_a_job_then_404(api: httpx.Client, fake: FakeCluster) -> None:
    fake.apply(job_manifest())
    assert api.delete(JOB).json() == {"kind": "Status", "status": "Success"}
    assert ("default", "train") not in fake.jobs
    r = api.delete(JOB)
    assert r.status_code == 404 and r.json() == {"error": "job default/train not found", "reason": "NotFound"}


@pytest.mark.parametrize("action", ["AbortJob", "ResumeJob"])
def test_commands(api: httpx.Client, fake: FakeCluster, action: str) -> None:
    fake.apply(job_manifest())
    assert api.post(f"{JOB}/commands", json={"action": action}).status_code == 200
    assert fake.commands == [("default", "train", action)]


@pytest.mark.parametrize(
    "body",
    [pytest.param({"action": "KillJob"}, id="unknown-action"), pytest.param({}, id="no-action")],
)
def test_a_bad_command_is_422_in_one_line(api: httpx.Client, fake: FakeCluster, body: dict[str, str]) -> None:
    fake.apply(job_manifest())
    r = api.post(f"{JOB}/commands", json=body)
    assert r.status_code == 422
    error = r.json()["error"]
    assert error.startswith("body.action: ") and "\n" not in error
    assert fake.commands == []


def test_queues_create_list_get_state_delete(api: httpx.Client, fake: FakeCluster) -> None:
    r = api.post(QUEUES, json=queue_manifest("research", weight=3))
    assert r.status_code == 201 and r.json()["spec"]["weight"] == 3
    assert [q["metadata"]["name"] for q in api.get(QUEUES).json()["items"]] == ["default", "research"]
    assert api.get(f"{QUEUES}/research").json()["status"]["state"] == "Open"
    closed = api.put(f"{QUEUES}/research/state", json={"state": "Closed"})
    assert closed.status_code == 200 and closed.json()["status"]["state"] == "Closed"
    assert api.delete(f"{QUEUES}/research").status_code == 200
    assert api.get(f"{QUEUES}/research").status_code == 404


def test_a_bad_queue_state_is_422(api: httpx.Client, fake: FakeCluster) -> None:
    r = api.put(f"{QUEUES}/default/state", json={"state": "Closing"})
    assert r.status_code == 422 and r.json()["error"].startswith("body.state: ")


def test_deleting_a_queue_with_jobs_is_409(api: httpx.Client, fake: FakeCluster) -> None:
    fake.apply(queue_manifest("busy"))
    fake.apply(job_manifest(queue="busy"))
    r = api.delete(f"{QUEUES}/busy")
    assert r.status_code == 409
    assert r.json() == {"error": "queue busy still has jobs: default/train", "reason": "Conflict"}


def test_priority_class(api: httpx.Client, fake: FakeCluster) -> None:
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100}
    assert api.post("/apis/scheduling.k8s.io/v1/priorityclasses", json=pc).status_code == 201
    assert "high" in fake.priority_classes


def test_nodes(api: httpx.Client, fake: FakeCluster) -> None:
    body = api.get("/api/v1/nodes").json()
    assert body["kind"] == "NodeList" and body["items"][0]["name"] == "node-0"


def test_events_by_namespace_object_and_since(api: httpx.Client, fake: FakeCluster) -> None:
    fake.add_event("default", "train", "JobPhase", "Running")
    fake.add_event("default", "train-master-0", "Bind", "Scheduled")
    fake.add_event("other", "x", "JobPhase", "Pending")
    everything = api.get("/api/v1/events").json()["items"]
    assert [e["object"] for e in everything] == ["train", "train-master-0", "x"]
    in_default = api.get("/api/v1/namespaces/default/events").json()["items"]
    assert [e["object"] for e in in_default] == ["train", "train-master-0"]
    one = api.get("/api/v1/namespaces/default/events", params={"object": "train-master-0"}).json()["items"]
    assert [e["reason"] for e in one] == ["Scheduled"]
    later = api.get("/api/v1/namespaces/default/events", params={"since": 1}).json()["items"]
    assert [e["id"] for e in later] == [2]


def test_info_says_where_the_api_listens(api: httpx.Client, fake: FakeCluster) -> None:
    info = api.get("/info").json()
    assert info["listening"] == str(api.base_url).rstrip("/")
    assert info["nodes"] == 1 and "version" in info


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({}, [True], id="default-stops-pods"),
        pytest.param({"stopPods": "true"}, [True], id="stop-pods"),
        pytest.param({"stopPods": "false"}, [False], id="keep-pods"),
    ],
)
def test_shutdown_without_a_hook_shuts_the_cluster_down(
    api: httpx.Client, fake: FakeCluster, query: dict[str, str], expected: list[bool]
) -> None:
    r = api.post("/shutdown", params=query)
    assert r.status_code == 202 and r.json()["status"] == "ShuttingDown"
    assert fake.shutdowns == expected


def test_openapi_describes_the_api(api: httpx.Client, fake: FakeCluster) -> None:
    spec = api.get("/openapi.json").json()
    assert spec["info"]["title"] == "caldera"
    paths = set(spec["paths"])
    for path in (f"{JOBS}/namespaces/{{namespace}}/jobs", QUEUES, "/api/v1/nodes", "/info", "/shutdown"):
        assert path in paths
    assert "/api/v1/namespaces/{namespace}/pods/{pod}/log" in paths


def test_log_file_path(api: httpx.Client, fake: FakeCluster, tmp_path: Path) -> None:
    fake.apply(job_manifest())
    r = api.get("/api/v1/namespaces/default/pods/train-master-0/logfile")
    assert r.json() == {"path": str(tmp_path / "pods" / "default" / "train-master-0" / "log")}


def test_patch_a_nodes_labels_and_taints(api: httpx.Client, fake: FakeCluster) -> None:
    patch = {
        "metadata": {"labels": {"gpu": "a100", "gone": None}},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
    }
    r = api.patch("/api/v1/nodes/node-0", json=patch)
    assert r.status_code == 200 and r.json()["labels"] == {"gpu": "a100"}
    assert fake.patches == [("node-0", {"gpu": "a100", "gone": None}, [{"key": "k", "effect": "NoSchedule"}])]
    assert api.patch("/api/v1/nodes/nope", json={"metadata": {"labels": {"a": "b"}}}).status_code == 404
    bad = api.patch("/api/v1/nodes/node-0", json={"metadata": {"name": "x"}, "status": {}})
    assert bad.status_code == 422 and {e["path"] for e in bad.json()["errors"]} == {"status", "metadata.name"}


def test_list_priority_classes(api: httpx.Client, fake: FakeCluster) -> None:
    fake.apply(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 9}
    )
    listed = api.get("/apis/scheduling.k8s.io/v1/priorityclasses").json()
    assert listed["kind"] == "PriorityClassList" and [pc["value"] for pc in listed["items"]] == [9]


@pytest.mark.parametrize(
    ("body", "where"),
    [
        pytest.param(b"{not json", "body", id="not-json"),
        pytest.param(b"[1, 2]", "JSON object", id="not-an-object"),
        pytest.param(b'{"kind": "Queue"}', "kind", id="another-kind"),
        pytest.param(b'{"metadata": {"namespace": "other"}}', "metadata.namespace", id="another-namespace"),
        pytest.param(b'{"metadata": 3}', "metadata", id="metadata-not-a-mapping"),
    ],
)
def test_a_bad_submission_is_422_in_one_line_and_nothing_is_applied(
    api: httpx.Client, fake: FakeCluster, body: bytes, where: str
) -> None:
    r = api.post(f"{JOBS}/namespaces/default/jobs", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    answer = r.json()
    assert answer["reason"] == "Invalid" and where in r.text and "\n" not in answer["error"], answer
    assert fake.list_jobs(None) == []


def test_a_submission_without_the_token_is_401_and_nothing_is_applied(
    anonymous: httpx.Client, fake: FakeCluster
) -> None:
    r = anonymous.post(f"{JOBS}/namespaces/default/jobs", json=job_manifest())
    assert r.status_code == 401 and r.json()["reason"] == "Unauthorized"
    assert fake.list_jobs(None) == []
