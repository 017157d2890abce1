"""kubectl's habits on every verb that lists: -o wide|name, --no-headers, -l, -A, -w, Lists, RFC 3339 times."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from caldera.testing.fake_cluster import DEFAULT_NODE, FakeCluster

from .conftest import CREATED, Run
from .fake_daemon import VerbsFake
from .manifests import job

CREATED_RFC3339 = "1970-01-12T13:46:40Z"  # conftest's CREATED, 1,000,000 s after the epoch
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def labelled(name: str, namespace: str | None = None, **labels: str) -> dict[str, object]:
    manifest = job(name, namespace=namespace, workers=1, gpus=0)
    manifest["metadata"]["labels"] = labels  # type: ignore[index]
    return manifest


@pytest.fixture
def jobs(fake: FakeCluster) -> FakeCluster:
    fake.apply(labelled("alpha", team="vision", tier="prod"))
    fake.apply(labelled("beta", team="speech"))
    fake.apply(labelled("gamma", namespace="lab", team="vision"))
    fake.set_phase("default", "alpha", "Running", message="2 pods started")
    fake.set_pod("default", "alpha-master-0", phase="Running", node="node-0")
    fake.set_pod("default", "alpha-worker-0", phase="Running", node="node-1")
    return fake


def test_list_wide_adds_nodes_and_message(run: Run, jobs: FakeCluster) -> None:
    lines = run("list", "-o", "wide").stdout.splitlines()
    assert lines[0].split()[-2:] == ["NODES", "MESSAGE"]
    assert lines[1].split()[0] == "alpha" and lines[1].split()[-4:] == ["node-0,node-1", "2", "pods", "started"]


def test_name_output(run: Run, jobs: FakeCluster) -> None:
    assert run("list", "-o", "name").stdout == "job.batch.volcano.sh/alpha\njob.batch.volcano.sh/beta\n"
    assert run("get", "alpha", "beta", "-o", "name").stdout == "job.batch.volcano.sh/alpha\njob.batch.volcano.sh/beta\n"
    assert run("queue", "list", "-o", "name").stdout == "queue.scheduling.volcano.sh/default\n"
    assert run("top", "node", "-o", "name").stdout == "node/node-0\n"


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("list",), id="list"),
        pytest.param(("get", "-A"), id="get-all"),
        pytest.param(("top", "job"), id="top-job"),
        pytest.param(("queue", "list"), id="queue-list"),
    ],
)
def test_no_headers(run: Run, jobs: FakeCluster, args: tuple[str, ...]) -> None:
    with_headers = [line.split() for line in run(*args).stdout.splitlines()]
    without = [line.split() for line in run(*args, "--no-headers").stdout.splitlines()]
    assert without == with_headers[1:]  # as kubectl, the columns are then as wide as the rows need


def test_selector_on_list_get_and_top(run: Run, jobs: FakeCluster) -> None:
    def names(*args: str) -> list[str]:
        return [line.split()[0] for line in run(*args, "--no-headers").stdout.splitlines() if line.strip()]

    assert names("list", "-l", "team=vision") == ["alpha"]
    assert names("list", "-A", "-l", "team=vision") == ["default", "lab"]  # NAMESPACE comes first
    assert names("list", "-l", "team!=vision") == ["beta"]
    assert names("list", "-l", "team in (speech,vision),!tier") == ["beta"]
    assert names("get", "-l", "tier") == ["alpha"]
    assert names("top", "job", "-l", "team=speech")[:1] == ["beta"]
    assert run("list", "-l", "team=nobody").stderr == "No jobs found in namespace default.\n"


def test_a_bad_selector_is_a_usage_error(run: Run, jobs: FakeCluster) -> None:
    r = run("list", "-l", "team in (vision")
    assert r.exit_code == 2 and "'(' without ')'" in r.stderr and r.stdout == ""


def test_get_selects_with_a_kind_and_all_namespaces(run: Run, jobs: FakeCluster) -> None:
    lines = run("get", "-A").stdout.splitlines()
    assert lines[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert [line.split()[:2] for line in lines[1:]] == [["default", "alpha"], ["default", "beta"], ["lab", "gamma"]]
    assert run("get", "jobs", "-n", "lab", "--no-headers").stdout.split()[0] == "gamma"
    assert run("get", "alpha", "-A").exit_code == 2  # a name lives in one namespace, as kubectl says
    assert run("get").exit_code == 2


def test_json_of_a_selection_is_a_list_and_of_one_job_the_object(run: Run, jobs: FakeCluster) -> None:
    one = json.loads(run("get", "alpha", "-o", "json").stdout)
    assert one["name"] == "alpha" and one["labels"] == {"team": "vision", "tier": "prod"}
    several = json.loads(run("get", "-l", "team", "-o", "json").stdout)
    assert several["kind"] == "List" and [j["name"] for j in several["items"]] == ["alpha", "beta"]
    assert yaml.safe_load(run("list", "-o", "yaml").stdout)["kind"] == "List"


def test_times_are_rfc3339_in_json_and_yaml(run: Run, jobs: FakeCluster) -> None:
    jobs.add_event("default", "alpha", "JobPhase", "Running", "started")
    summary = json.loads(run("get", "alpha", "-o", "json").stdout)
    assert summary["creationTimestamp"] == CREATED_RFC3339
    assert summary["startTime"] == CREATED_RFC3339 and summary["completionTime"] is None
    described = yaml.safe_load(run("describe", "alpha", "-o", "yaml").stdout)
    assert described["job"]["metadata"]["creationTimestamp"] == CREATED_RFC3339
    assert described["events"][0]["time"] == CREATED_RFC3339
    listed = json.loads(run("list", "-o", "json").stdout)["items"]
    assert all(RFC3339.match(j["creationTimestamp"]) for j in listed)
    assert not re.search(r'"(creationTimestamp|startTime|time)": \d', run("describe", "alpha", "-o", "json").stdout)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("list", "-A", "-o", "wide"), id="list"),
        pytest.param(("get", "alpha"), id="get"),
        pytest.param(("describe", "alpha"), id="describe"),
        pytest.param(("top", "node", "-o", "wide"), id="top-node"),
        pytest.param(("top", "job", "-A"), id="top-job"),
        pytest.param(("queue", "list", "-o", "wide"), id="queue-list"),
    ],
)
def test_no_line_ends_with_a_space(run: Run, jobs: FakeCluster, args: tuple[str, ...]) -> None:
    jobs.add_event("default", "alpha", "JobPhase", "Running", "")
    r = run(*args)
    assert r.exit_code == 0 and r.stdout.strip()
    assert [line for line in r.stdout.splitlines() if line != line.rstrip()] == []


def test_top_node_reads_cpu_in_cores_to_one_decimal(run: Run, fake: FakeCluster) -> None:
    third = {**DEFAULT_NODE, "allocatable": {**DEFAULT_NODE["allocatable"], "cpu": "0.6666666666666666"}}
    busy = {
        **DEFAULT_NODE,
        "name": "node-1",
        "allocatable": {**DEFAULT_NODE["allocatable"], "cpu": "2", "memory": "1536Mi"},
        "allocated": {"cpu": "700m", "memory": "512Mi"},
        "labels": {"zone": "a"},
        "taints": [{"key": "gpu", "value": "a100", "effect": "NoSchedule"}],
    }
    fake.nodes = [third, busy]
    lines = run("top", "node", "-o", "wide").stdout.splitlines()
    assert lines[1].split()[1:2] == ["0/0.7"]
    assert lines[2].split()[1:5] == ["0.7/2", "(35%)", "512Mi/1.5Gi", "(33%)"]
    assert lines[2].split()[-2:] == ["zone=a", "gpu=a100:NoSchedule"]


def test_get_watch_prints_the_pods_then_a_row_per_change(run: Run, fake: VerbsFake) -> None:
    fake.apply(job("train", workers=1, gpus=0))

    def pod(kind: str, name: str, phase: str, node: str = "", job_name: str = "train") -> dict[str, object]:
        labels = {"volcano.sh/job-name": job_name, "volcano.sh/task-spec": name.split("-")[1]}
        meta = {"name": name, "namespace": "default", "labels": labels, "creationTimestamp": CREATED}
        status = {"phase": phase, "exitCode": None, "restartCount": 0}
        return {"type": kind, "object": {"kind": "Pod", "metadata": meta, "spec": {"nodeName": node}, "status": status}}

    end = {"type": "BOOKMARK", "object": {"metadata": {"annotations": {"k8s.io/initial-events-end": "true"}}}}
    fake.watch_events = [
        pod("ADDED", "train-worker-0", "Pending"),
        pod("ADDED", "train-master-0", "Pending"),
        pod("ADDED", "other-master-0", "Running", job_name="other"),
        end,
        pod("MODIFIED", "train-master-0", "Pending"),  # nothing shown changed: no row
        pod("MODIFIED", "train-master-0", "Running", "node-0"),
        pod("DELETED", "train-worker-0", "Running"),
    ]
    r = run("get", "train", "-w")
    assert r.exit_code == 0 and fake.watches == [(("Pod",), "default")]
    assert [line.split() for line in r.stdout.splitlines()] == [
        ["INSTANCE", "TASK", "PHASE", "NODE", "EXIT", "RESTARTS", "AGE"],
        ["train-master-0", "master", "Pending", "-", "-", "0", "2m5s"],
        ["train-worker-0", "worker", "Pending", "-", "-", "0", "2m5s"],
        ["train-master-0", "master", "Running", "node-0", "-", "0", "2m5s"],
        ["train-worker-0", "worker", "Deleted", "-", "-", "-", "-"],
    ]


def test_get_watch_with_a_selector_follows_the_jobs(run: Run, fake: VerbsFake) -> None:
    fake.watch_events = []
    assert run("get", "-l", "team=a", "-w").exit_code == 0
    assert fake.watches == [(("Job", "PodGroup"), "default")]
