"""`caldera queue create|list|get|update|open|close|delete`."""

from __future__ import annotations

import json

import pytest
import yaml

from caldera.testing.fake_cluster import FakeCluster

from .conftest import Run
from .manifests import job


def test_create_with_weight_capability_and_reclaimable(run: Run, fake: FakeCluster) -> None:
    capability = ["--capability", "cpu=8", "--capability", "nvidia.com/gpu=4"]
    r = run("queue", "create", "research", "--weight", "3", *capability, "--no-reclaimable")
    assert r.exit_code == 0 and r.stdout == "queue.scheduling.volcano.sh/research created\n"
    spec = fake.queues["research"]["spec"]
    assert spec["weight"] == 3 and spec["reclaimable"] is False
    assert spec["capability"] == {"cpu": "8", "nvidia.com/gpu": "4"}


def test_create_refuses_an_existing_queue(run: Run, fake: FakeCluster) -> None:
    r = run("queue", "create", "default")
    assert r.exit_code == 2
    assert r.stderr == "caldera: error: queue default already exists (change it with `caldera queue update`)\n"


@pytest.mark.parametrize("bad", ["cpu", "=8", "cpu="])
def test_a_bad_capability_is_a_usage_error(run: Run, fake: FakeCluster, bad: str) -> None:
    r = run("queue", "create", "q", "--capability", bad)
    assert r.exit_code == 2 and "is not RES=QTY" in r.stderr and "q" not in fake.queues


def test_an_invalid_quantity_is_refused_by_the_cluster(run: Run, fake: FakeCluster) -> None:
    r = run("queue", "create", "q", "--capability", "cpu=lots")
    assert r.exit_code == 2 and r.stderr.startswith("caldera: error: spec.capability") and "q" not in fake.queues


def test_list_and_get(run: Run, fake: FakeCluster) -> None:
    run("queue", "create", "research", "--capability", "cpu=8")
    lines = run("queue", "list").stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "WEIGHT", "RECLAIMABLE", "CAPABILITY"]
    assert lines[1].split() == ["default", "Open", "1", "True", "-"]
    assert lines[2].split() == ["research", "Open", "1", "True", "cpu=8"]
    assert [q["metadata"]["name"] for q in json.loads(run("queue", "list", "-o", "json").stdout)["items"]] == [
        "default",
        "research",
    ]
    assert yaml.safe_load(run("queue", "get", "research").stdout)["spec"]["capability"] == {"cpu": "8"}
    assert json.loads(run("queue", "get", "research", "-o", "json").stdout)["status"]["state"] == "Open"


def test_update_changes_only_what_is_given_and_keeps_the_state(run: Run, fake: FakeCluster) -> None:
    run("queue", "create", "research", "--weight", "2", "--capability", "cpu=8")
    run("queue", "close", "research")
    r = run("queue", "update", "research", "--capability", "memory=64Gi")
    assert r.exit_code == 0 and r.stdout == "queue.scheduling.volcano.sh/research configured\n"
    q = fake.queues["research"]
    assert q["spec"]["weight"] == 2 and q["spec"]["capability"] == {"cpu": "8", "memory": "64Gi"}
    assert q["status"]["state"] == "Closed"


def test_open_close(run: Run, fake: FakeCluster) -> None:
    assert run("queue", "close", "default").stdout == "queue.scheduling.volcano.sh/default closed\n"
    assert fake.queues["default"]["status"]["state"] == "Closed"
    assert run("queue", "open", "default").stdout == "queue.scheduling.volcano.sh/default opened\n"
    assert fake.queues["default"]["status"]["state"] == "Open"


def test_delete(run: Run, fake: FakeCluster) -> None:
    run("queue", "create", "busy")
    fake.apply(job(queue="busy"))
    r = run("queue", "delete", "busy")
    assert r.exit_code == 2 and r.stderr == "caldera: error: queue busy still has jobs: default/train\n"
    fake.delete_job("default", "train")
    assert run("queue", "delete", "busy").stdout == "queue.scheduling.volcano.sh/busy deleted\n"


@pytest.mark.parametrize("verb", ["get", "open", "close", "delete", "update"])
def test_an_unknown_queue(run: Run, fake: FakeCluster, verb: str) -> None:
    r = run("queue", verb, "nope")
    assert r.exit_code == 2 and r.stderr == "caldera: error: queue nope not found\n"
