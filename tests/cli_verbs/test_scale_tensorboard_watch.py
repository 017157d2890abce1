"""`caldera scale`, `caldera tensorboard`, and `caldera list -w` (over a fake whose watch plays scripted events)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from caldera.core.errors import CalderaError

from .conftest import CREATED, Run
from .fake_daemon import VerbsFake
from .manifests import job

ELASTIC_MAX = "caldera.dev/elastic-max-worker"


def elastic_job(name: str = "ddp", *, workers: int = 2, top: int = 4) -> dict[str, Any]:
    manifest = job(name, workers=workers)
    manifest["metadata"]["annotations"] = {ELASTIC_MAX: str(top)}  # type: ignore[index]
    manifest["spec"]["tasks"][1]["minAvailable"] = 1  # type: ignore[index]
    return manifest


# ---------------------------------------------------------------- scale


def test_scale_an_elastic_task(run: Run, fake: VerbsFake) -> None:
    fake.apply(elastic_job())
    r = run("scale", "ddp", "--replicas", "4")
    assert r.exit_code == 0 and r.stdout == "job.batch.volcano.sh/ddp scaled\n"
    assert fake.scales == [("default", "ddp", 4, "worker")]
    pods = json.loads(run("get", "ddp", "-o", "json").stdout)["pods"]
    assert sorted(p["name"] for p in pods if p["task"] == "worker") == [f"ddp-worker-{i}" for i in range(4)]


def test_scale_json_is_the_job_summary(run: Run, fake: VerbsFake) -> None:
    fake.apply(elastic_job("team-job"))
    r = run("scale", "team-job", "--replicas", "1", "--task", "worker", "-o", "json")
    summary = json.loads(r.stdout)
    assert summary["name"] == "team-job" and [p["name"] for p in summary["pods"]] == [
        "team-job-master-0",
        "team-job-worker-0",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["nope", "--replicas", "2"], "caldera: error: job default/nope not found", id="unknown-job"),
        pytest.param(["ddp", "--replicas", "9"], "9 is outside task worker's range 1:4", id="above-max"),
        pytest.param(
            ["ddp", "--replicas", "2", "--task", "master"], "task master of job ddp cannot be scaled", id="task"
        ),
        pytest.param(["ddp", "--replicas", "-1"], "-1 is not in the range x>=0", id="negative"),
        pytest.param(["ddp"], "Missing option '--replicas'", id="no-replicas"),
    ],
)
def test_scale_refused(run: Run, fake: VerbsFake, args: list[str], message: str) -> None:
    fake.apply(elastic_job())
    r = run("scale", *args)
    assert r.exit_code == 2 and message in r.stderr and r.stdout == ""
    assert fake.scales == []


# ---------------------------------------------------------------- tensorboard


def test_tensorboard_without_one_says_how_to_get_one(run: Run, fake: VerbsFake) -> None:
    fake.apply(job("plain"))
    r = run("tensorboard", "plain")
    assert r.exit_code == 2
    assert (
        r.stderr == "caldera: error: job default/plain has no TensorBoard: submit it with --tensorboard --logdir DIR\n"
    )


def test_tensorboard_prints_the_url_and_get_shows_it(
    run: Run, fake: VerbsFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.apply(job("tb"))
    summary = fake.get_job("default", "tb")
    monkeypatch.setattr(fake, "get_job", lambda ns, name: {**summary, "tensorboard": "http://127.0.0.1:6006"})
    assert run("tensorboard", "tb").stdout == "http://127.0.0.1:6006\n"
    assert ["TensorBoard:", "http://127.0.0.1:6006"] in [line.split() for line in run("get", "tb").stdout.splitlines()]


def test_tensorboard_unknown_job(run: Run) -> None:
    r = run("tensorboard", "nope")
    assert r.exit_code == 2 and r.stderr == "caldera: error: job default/nope not found\n"


# ---------------------------------------------------------------- list -w


def job_event(kind: str, name: str, phase: str, *, running: int = 0, start: float | None = None) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default", "creationTimestamp": CREATED}
    spec = {"queue": "default", "minAvailable": 2, "tasks": [{"name": "worker", "replicas": 2}]}
    status = {"state": {"phase": phase}, "running": running, "retryCount": 0, "startTime": start}
    return {"type": kind, "object": {"kind": "Job", "metadata": meta, "spec": spec, "status": status}}


def bookmark() -> dict[str, Any]:
    annotations = {"k8s.io/initial-events-end": "true"}
    return {
        "type": "BOOKMARK",
        "object": {"kind": "Status", "metadata": {"resourceVersion": "7", "annotations": annotations}},
    }


def test_list_watch_prints_the_table_then_a_row_per_change(run: Run, fake: VerbsFake) -> None:
    fake.watch_events = [
        job_event("ADDED", "a-long-job-name-here", "Running", running=2, start=CREATED),
        bookmark(),
        job_event("ADDED", "b", "Pending"),
        job_event("MODIFIED", "b", "Pending"),  # nothing shown changed: no row
        job_event("MODIFIED", "b", "Running", running=1, start=CREATED + 5),
        job_event("DELETED", "a-long-job-name-here", "Running"),
    ]
    r = run("list", "-w")
    assert r.exit_code == 0 and fake.watches == [(("Job", "PodGroup"), "default")]
    rows = [line.split() for line in r.stdout.splitlines()]
    assert rows == [
        ["NAME", "TYPE", "QUEUE", "PHASE", "RUNNING", "RETRIES", "MIN", "AGE", "DURATION", "REASON"],
        ["a-long-job-name-here", "-", "default", "Running", "2/2", "0", "2", "2m5s", "2m5s", "-"],
        ["b", "-", "default", "Pending", "0/2", "0", "2", "2m5s", "-", "-"],
        ["b", "-", "default", "Running", "1/2", "0", "2", "2m5s", "2m", "-"],
        ["a-long-job-name-here", "-", "-", "Deleted", "-", "-", "-", "-", "-", "-"],
    ]
    lines = r.stdout.splitlines()
    assert len({line.index("QUEUE") if "QUEUE" in line else line.index("default") for line in lines[:4]}) == 1


def podgroup_event(kind: str, name: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default", "creationTimestamp": CREATED}
    return {"type": kind, "object": {"kind": "PodGroup", "metadata": meta, "status": {"phase": "Inqueue"}}}


def test_list_watch_says_why_a_job_waits_as_list_does(run: Run, fake: VerbsFake) -> None:
    fake.apply(job("big"))
    fake.set_waiting("default", "big", "Unschedulable", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    fake.watch_events = [
        job_event("ADDED", "big", "Pending"),
        podgroup_event("ADDED", "big-4f1c"),
        bookmark(),
        lambda: fake.set_waiting(
            "default", "big", "NeverFits", "task worker: no node has 1 nvidia.com/gpu", never=True
        ),
        podgroup_event("MODIFIED", "big-4f1c"),  # the scheduler's verdict changed: the job's row again
        podgroup_event("MODIFIED", "big-4f1c"),  # nothing shown changed: no row
        podgroup_event("MODIFIED", "other-1"),  # not a job shown
        lambda: fake.set_waiting("default", "big", "", ""),
        job_event("MODIFIED", "big", "Running", running=2, start=CREATED + 5),
    ]
    r = run("list", "-w")
    assert r.exit_code == 0, r.output
    rows = [line.split() for line in r.stdout.splitlines()]
    assert rows == [
        ["NAME", "TYPE", "QUEUE", "PHASE", "RUNNING", "RETRIES", "MIN", "AGE", "DURATION", "REASON"],
        ["big", "-", "default", "Pending", "0/2", "0", "2", "2m5s", "-", "Unschedulable"],
        ["big", "-", "default", "Pending", "0/2", "0", "2", "2m5s", "-", "NeverFits"],
        ["big", "-", "default", "Running", "2/2", "0", "2", "2m5s", "2m", "-"],
    ]
    assert run("list").stdout.splitlines()[0].split() == rows[0]  # the columns `list` prints


def test_list_watch_follows_the_jobs_alone_where_a_watch_takes_one_kind(
    run: Run, fake: VerbsFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    played = fake.watch

    def one_kind(kinds: tuple[str, ...] = (), namespace: str | None = None, **_: Any) -> Iterator[dict[str, Any]]:
        if len(kinds) != 1:  # as the Kubernetes client says it
            raise CalderaError("on Kubernetes one kind is watched at a time: Job or Pod")
        yield from played(kinds, namespace)

    monkeypatch.setattr(fake, "watch", one_kind)
    fake.apply(job("big"))
    fake.set_waiting("default", "big", "Unschedulable", "0/2 nodes are available")
    fake.watch_events = [job_event("ADDED", "big", "Pending"), bookmark()]
    r = run("list", "-w")
    assert r.exit_code == 0, r.output
    assert fake.watches == [(("Job",), "default")]
    assert [line.split()[-1] for line in r.stdout.splitlines()] == ["REASON", "Unschedulable"]


def test_list_watch_all_namespaces_and_json_lines(run: Run, fake: VerbsFake) -> None:
    fake.watch_events = [bookmark(), job_event("ADDED", "b", "Pending")]
    r = run("list", "-w", "-A", "-o", "json")
    assert fake.watches == [(("Job",), None)]
    assert [json.loads(line)["type"] for line in r.stdout.splitlines()] == ["ADDED"]
