"""The daemon's views (overview, allocations, timeline) over real pods, and the version to watch from."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from caldera.system.daemon import EmbeddedCluster
from caldera.testing.waiting import wait_until

from .kit import job, sleeper

GPU = "nvidia.com/gpu"


def gpu_job(name: str, replicas: int, gpus: int, command: list[str], queue: str = "default") -> dict[str, object]:
    manifest = job(name, command, replicas=replicas)
    task = manifest["spec"]["tasks"][0]  # type: ignore[index]
    task["template"]["spec"]["containers"][0]["resources"]["requests"][GPU] = str(gpus)
    manifest["spec"]["queue"] = queue  # type: ignore[index]
    return manifest


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    c = EmbeddedCluster(
        tmp_path / "home", nodes=2, cpus_per_node="2", memory_per_node="4Gi", gpus_per_node=2, grace=2.0
    )
    c.start()
    try:
        yield c
    finally:
        c.shutdown(stop_pods=True)


def running(c: EmbeddedCluster, name: str, n: int) -> None:
    wait_until(
        lambda: sum(p["phase"] == "Running" for p in c.get_job("default", name)["pods"]) == n,
        timeout=30,
        what=f"{n} pods of {name} running",
    )


def test_overview_counts_what_is_allocated_and_each_queues_share(cluster: EmbeddedCluster) -> None:
    cluster.apply(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "research"},
            "spec": {"weight": 1},
        }
    )
    cluster.apply(gpu_job("a", 2, 1, sleeper()))
    cluster.apply(gpu_job("big", 1, 3, sleeper(), queue="research"))  # 3 GPUs on no node: it waits
    running(cluster, "a", 2)
    wait_until(lambda: cluster.overview()["jobs"].get("Pending") == 1, timeout=30, what="big to be pending")
    view = cluster.overview()
    resources = {r["name"]: r for r in view["resources"]}
    assert resources[GPU] == {"name": GPU, "capacity": "4", "allocated": "2"}
    assert resources["cpu"] == {"name": "cpu", "capacity": "4", "allocated": "200m"}
    assert [r["name"] for r in view["resources"]] == [GPU, "cpu", "memory"]
    assert view["nodes"] == {"total": 2, "ready": 2}
    assert view["jobs"] == {"Pending": 1, "Running": 1} and view["pods"] == {"Pending": 1, "Running": 2}
    queues = {q["name"]: q for q in view["queues"]}
    assert [q["name"] for q in view["queues"]] == ["default", "research"]
    assert queues["default"]["allocated"][GPU] == "2" and queues["default"]["requested"][GPU] == "2"
    assert queues["default"]["jobs"] == {"Running": 1} and queues["research"]["jobs"] == {"Pending": 1}
    assert queues["default"]["deserved"][GPU] == "2"
    assert queues["research"]["requested"][GPU] == "3" and GPU not in queues["research"]["allocated"]
    assert view["events"] and view["events"][-1]["id"] > view["events"][0]["id"]
    assert view["resourceVersion"] <= cluster.info()["resourceVersion"]


def test_allocations_name_each_pods_gpus(cluster: EmbeddedCluster) -> None:
    cluster.apply(gpu_job("a", 3, 1, sleeper()))
    running(cluster, "a", 3)
    nodes = {n["name"]: n for n in cluster.allocations()["items"]}
    assert list(nodes) == ["node-0", "node-1"]
    assert nodes["node-0"]["gpuIds"] == [0, 1] and nodes["node-1"]["gpuIds"] == [2, 3]
    assert all(n["virtualGpus"] for n in nodes.values())
    held = {p["name"]: (n["name"], p["gpus"]) for n in nodes.values() for p in n["pods"]}
    assert sorted(held) == ["a-worker-0", "a-worker-1", "a-worker-2"]
    ids = [g for _, gpus in held.values() for g in gpus]
    assert len(ids) == 3 and len(set(ids)) == 3
    for node, gpus in held.values():
        assert set(gpus) <= set(nodes[node]["gpuIds"])
    pod = nodes[held["a-worker-0"][0]]["pods"][0]
    assert pod["job"] == "a" and pod["task"] == "worker" and pod["requests"][GPU] == "1"
    assert sum(int(n["allocated"].get(GPU, "0")) for n in nodes.values()) == 3
    assert all(n["podsListed"] == "all" and n["podCount"] == len(n["pods"]) for n in nodes.values())


def test_allocations_of_one_node_and_of_nodes_with_many_pods(cluster: EmbeddedCluster) -> None:
    cluster.apply(gpu_job("a", 2, 2, sleeper()))  # a node's two GPUs each
    cluster.apply(job("b", sleeper(), replicas=4))  # no GPU
    running(cluster, "a", 2)
    running(cluster, "b", 4)
    full = {n["name"]: n for n in cluster.allocations()["items"]}
    brief = {n["name"]: n for n in cluster.allocations(pods_up_to=2)["items"]}
    assert sum(n["podCount"] for n in brief.values()) == 6
    for name, n in brief.items():
        every = n["podCount"] <= 2
        assert n["podsListed"] == ("all" if every else "gpu")
        assert n["pods"] == (full[name]["pods"] if every else [p for p in full[name]["pods"] if p["gpus"]])
        assert {k: v for k, v in n.items() if k not in ("pods", "podsListed", "time")} == {
            k: v for k, v in full[name].items() if k not in ("pods", "podsListed", "time")
        }
    assert [p["job"] for n in brief.values() for p in n["pods"] if n["podsListed"] == "gpu"] == ["a"] * sum(
        n["podsListed"] == "gpu" for n in brief.values()
    )
    assert [n["name"] for n in cluster.allocations(node="node-1")["items"]] == ["node-1"]
    assert cluster.allocations(node="node-9")["items"] == []


def test_the_timeline_shows_each_run_with_its_outcome(cluster: EmbeddedCluster) -> None:
    cluster.apply(job("quick", ["python", "-c", "pass"], replicas=2))
    wait_until(
        lambda: cluster.get_job("default", "quick")["phase"] == "Completed", timeout=30, what="quick to complete"
    )
    cluster.apply(job("long", sleeper()))
    running(cluster, "long", 1)
    wait_until(lambda: len(cluster.timeline()["items"]) == 3, timeout=10, what="three runs in the timeline")
    runs = {s["pod"]: s for s in cluster.timeline()["items"]}
    assert runs["quick-worker-0"]["outcome"] == "Succeeded" and runs["quick-worker-0"]["exitCode"] == 0
    assert runs["quick-worker-0"]["end"] >= runs["quick-worker-0"]["start"]
    assert runs["long-worker-0"]["outcome"] == "Running" and runs["long-worker-0"]["end"] is None
    assert {s["job"] for s in runs.values()} == {"quick", "long"}
    assert [s["pod"] for s in cluster.timeline(job="long")["items"]] == ["long-worker-0"]
    cluster.delete_job("default", "long")
    wait_until(
        lambda: cluster.timeline(job="long")["items"][0]["outcome"] == "Deleted", timeout=30, what="long's run to end"
    )


def test_a_watch_from_a_views_version_sees_every_later_change(cluster: EmbeddedCluster) -> None:
    version = cluster.overview()["resourceVersion"]
    cluster.apply(job("later", sleeper()))
    seen: list[str] = []

    def job_added() -> bool:
        batch = cluster.changes(("Job",), None, version, timeout=1.0)
        seen.extend(e["object"]["metadata"]["name"] for e in batch["events"])
        return "later" in seen

    wait_until(job_added, timeout=30, what="the job in the watch from the overview's version")


def test_the_job_table_has_the_fields_of_the_full_jobs(cluster: EmbeddedCluster) -> None:
    cluster.apply(gpu_job("a", 2, 1, sleeper()))
    running(cluster, "a", 2)
    table = cluster.job_table()
    assert table["resourceVersion"] <= cluster.info()["resourceVersion"]
    [row] = table["items"]
    [full] = [e["object"] for e in cluster.changes(("Job",))["events"]]

    def same(part: object, whole: object) -> None:  # every field of the row is the full object's
        if isinstance(part, dict):
            assert isinstance(whole, dict)
            for key, value in part.items():
                same(value, whole[key])
        elif isinstance(part, list):
            assert isinstance(whole, list) and len(part) == len(whole)
            for p, w in zip(part, whole, strict=True):
                same(p, w)
        else:
            assert part == whole

    same(row, full)
    assert row["status"]["running"] == 2 and row["spec"]["tasks"] == [{"name": "worker", "replicas": 2}]


def test_describe_says_the_version_to_watch_from(cluster: EmbeddedCluster) -> None:
    cluster.apply(job("d", sleeper()))
    before = cluster.info()["resourceVersion"]
    seen = cluster.describe_job("default", "d")
    assert before <= seen["resourceVersion"] <= cluster.info()["resourceVersion"]


def test_describe_counts_the_podgroups_pods(cluster: EmbeddedCluster) -> None:
    """As Volcano's scheduler writes a PodGroup's status: its running, succeeded and failed pods."""
    cluster.apply(job("d", sleeper(), replicas=2))
    running(cluster, "d", 2)
    status = cluster.describe_job("default", "d")["podgroup"]["status"]
    assert (status["phase"], status["running"], status["succeeded"], status["failed"]) == ("Running", 2, 0, 0)
