"""list, get, describe, delete, suspend, resume: tables for people, stable JSON for programs."""

from __future__ import annotations

import json

import pytest
import yaml

from caldera.testing.fake_cluster import FakeCluster

from .conftest import Run
from .manifests import job

SUMMARY_FIELDS = {"name", "namespace", "queue", "phase", "retryCount", "minAvailable", "pods"}
POD_FIELDS = {"name", "task", "node", "phase", "exitCode", "restarts", "address"}


@pytest.fixture
def running(fake: FakeCluster) -> FakeCluster:
    fake.apply(job("train"))
    fake.set_phase("default", "train", "Running")
    fake.set_pod("default", "train-master-0", phase="Running", node="node-0", address="127.0.0.1:23456")
    fake.set_pod("default", "train-worker-1", phase="Failed", node="node-0", exit_code=137, restarts=2)
    fake.apply(job("other", namespace="team", workers=1))
    return fake


def test_list_table(run: Run, running: FakeCluster) -> None:
    r = run("list")
    assert r.exit_code == 0
    header, row = r.stdout.splitlines()
    assert header.split() == [
        "NAME", "TYPE", "QUEUE", "PHASE", "RUNNING", "RETRIES", "MIN", "AGE", "DURATION", "REASON",
    ]  # fmt: skip
    assert row.split() == ["train", "-", "default", "Running", "1/3", "0", "3", "2m5s", "2m5s", "-"]


def test_list_says_why_a_job_waits(run: Run, running: FakeCluster) -> None:
    running.set_waiting("default", "train", "NeverFits", "task worker fits no node", never=True)
    assert run("list").stdout.splitlines()[1].split()[-1] == "NeverFits"
    running.set_waiting("default", "train", "CrashLoopBackOff", "pod train-worker-1: back-off 20s")
    assert run("list").stdout.splitlines()[1].split()[-1] == "CrashLoopBackOff"
    assert json.loads(run("list", "-o", "json").stdout)["items"][0]["waiting"]["reason"] == "CrashLoopBackOff"


def test_get_and_describe_say_why_a_job_waits_and_whether_for_ever(run: Run, running: FakeCluster) -> None:
    running.set_waiting("default", "train", "NeverFits", "task worker fits no node", never=True)
    for verb in ("get", "describe"):
        out = run(verb, "train").stdout
        assert "Waiting:" in out and "NeverFits: task worker fits no node (never, as the nodes" in out
    running.set_waiting("default", "train", "Unschedulable", "0/3 nodes are available: 3 Insufficient cpu.")
    assert "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu. (not now;" in run("get", "train").stdout


def test_get_shows_a_pods_reason_in_place_of_its_phase(run: Run, running: FakeCluster) -> None:
    running.set_pod("default", "train-worker-1", phase="Running", reason="CrashLoopBackOff", exit_code=1)
    running.set_pod("default", "train-worker-0", phase="Failed", reason="Stopped", exit_code=143)
    rows = {line.split()[1]: line.split() for line in run("get", "train").stdout.split("Instances")[1].splitlines()[2:]}
    assert rows["train-worker-1"][3] == "CrashLoopBackOff"
    assert rows["train-worker-0"][3] == "Stopped"


def test_explain(run: Run, running: FakeCluster) -> None:
    running.set_waiting("default", "train", "NeverFits", "task worker fits no node", never=True)
    r = run("explain", "train")
    assert r.exit_code == 0
    assert "NeverFits: it can never run as the nodes and its queue are." in r.stdout
    assert "never: task worker fits no node" in r.stdout
    assert json.loads(run("explain", "train", "-o", "json").stdout)["never"] == ["task worker fits no node"]
    assert run("explain", "nope").exit_code == 2


def test_list_all_namespaces(run: Run, running: FakeCluster) -> None:
    lines = run("list", "-A").stdout.splitlines()
    assert lines[0].split()[0] == "NAMESPACE"
    assert [line.split()[:2] for line in lines[1:]] == [["default", "train"], ["team", "other"]]


def test_list_json_has_the_stable_fields(run: Run, running: FakeCluster) -> None:
    listed = json.loads(run("list", "-o", "json", "-n", "team").stdout)
    assert listed["kind"] == "List" and listed["apiVersion"] == "v1"
    jobs = listed["items"]
    assert [j["name"] for j in jobs] == ["other"]
    assert set(jobs[0]) >= SUMMARY_FIELDS and all(set(p) >= POD_FIELDS for p in jobs[0]["pods"])


def test_list_nothing(run: Run, fake: FakeCluster) -> None:
    r = run("list", "-n", "empty")
    assert r.exit_code == 0 and r.stdout == "" and r.stderr == "No jobs found in namespace empty.\n"


def test_get_table_shows_pods_in_rank_order(run: Run, running: FakeCluster) -> None:
    r = run("get", "train")
    assert r.exit_code == 0
    out = r.stdout
    assert "Name:" in out and "Phase:" in out and "Running" in out
    rows = [line.split() for line in out.split("Instances")[1].splitlines()[2:] if line.strip()]
    assert [row[:3] for row in rows] == [
        ["0", "train-master-0", "master"],
        ["1", "train-worker-0", "worker"],
        ["2", "train-worker-1", "worker"],
    ]
    assert rows[0][4:6] == ["node-0", "127.0.0.1:23456"] and rows[2][-2:] == ["137", "2"]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_get_machine_readable(run: Run, running: FakeCluster, fmt: str) -> None:
    out = run("get", "train", "-o", fmt).stdout
    summary = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    assert set(summary) >= SUMMARY_FIELDS
    assert summary["pods"][2] | {} == {
        "name": "train-worker-1",
        "task": "worker",
        "index": 1,
        "node": "node-0",
        "phase": "Failed",
        "exitCode": 137,
        "restarts": 2,
        "address": None,
        "reason": "",
        "message": "",
    }


def test_describe(run: Run, running: FakeCluster) -> None:
    running.add_event("default", "train-master-0", "Bind", "Scheduled", "bound to node-0 [gpu 0]")
    r = run("describe", "train")
    assert r.exit_code == 0
    for part in ("Spec:", "tasks:", "Status:", "PodGroup: Inqueue", "Instances", "Events", "bound to node-0 [gpu 0]"):
        assert part in r.stdout
    d = json.loads(run("describe", "train", "-o", "json").stdout)
    assert {"job", "summary", "podgroup", "events"} <= set(d)


def test_describe_without_events(run: Run, running: FakeCluster) -> None:
    assert "Events: <none>" in run("describe", "train").stdout


def test_delete(run: Run, running: FakeCluster) -> None:
    r = run("delete", "train")
    assert r.exit_code == 0 and r.stdout == "job.batch.volcano.sh/train deleted\n"
    assert ("default", "train") not in running.jobs


def test_delete_several_stops_at_the_first_unknown(run: Run, running: FakeCluster) -> None:
    r = run("delete", "-n", "team", "other", "train")
    assert r.exit_code == 2
    assert r.stdout == "job.batch.volcano.sh/other deleted\n"
    assert r.stderr == "caldera: error: job team/train not found\n"
    assert ("default", "train") in running.jobs


def test_suspend_and_resume(run: Run, running: FakeCluster) -> None:
    assert run("suspend", "train").stdout == "job.batch.volcano.sh/train suspended\n"
    assert running.jobs[("default", "train")].phase == "Aborted"
    assert run("resume", "train").stdout == "job.batch.volcano.sh/train resumed\n"
    assert running.commands == [("default", "train", "AbortJob"), ("default", "train", "ResumeJob")]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("get", "nope"), id="get"),
        pytest.param(("describe", "nope"), id="describe"),
        pytest.param(("delete", "nope"), id="delete"),
        pytest.param(("suspend", "nope"), id="suspend"),
        pytest.param(("resume", "nope"), id="resume"),
        pytest.param(("logs", "nope"), id="logs"),
        pytest.param(("wait", "nope"), id="wait"),
        pytest.param(("top", "job", "nope"), id="top-job"),
    ],
)
def test_an_unknown_job_is_one_line_and_exit_2(run: Run, fake: FakeCluster, args: tuple[str, ...]) -> None:
    r = run(*args)
    assert r.exit_code == 2
    assert r.stderr == "caldera: error: job default/nope not found\n"
    assert r.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("frobnicate",), id="unknown-command"),
        pytest.param(("get",), id="missing-argument"),
        pytest.param(("list", "-o", "xml"), id="bad-choice"),
        pytest.param(("list", "--bogus"), id="unknown-option"),
    ],
)
def test_usage_errors_exit_2(run: Run, fake: FakeCluster, args: tuple[str, ...]) -> None:
    r = run(*args)
    assert r.exit_code == 2 and r.stdout == "" and "Error:" in r.stderr
