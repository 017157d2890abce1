"""The embedded cluster in-process: real processes, the real store, restarts."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caldera.system.daemon import EmbeddedCluster
from caldera.testing.waiting import wait_until


def job(
    name: str, *, replicas: int = 1, gpus: int = 0, command: list[str], restart: str = "Never", **spec: Any
) -> dict[str, Any]:
    resources = {"requests": {"cpu": "100m", "memory": "64Mi", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": replicas,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "restartPolicy": restart,
                            "containers": [{"name": "main", "command": command, "resources": resources}],
                        }
                    },
                }
            ],
            **spec,
        },
    }


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "caldera"


@pytest.fixture
def cluster(home: Path) -> Iterator[EmbeddedCluster]:
    c = EmbeddedCluster(home, nodes=2, cpus_per_node="2", memory_per_node="4Gi", gpus_per_node=2, grace=2.0)
    c.start()
    try:
        yield c
    finally:
        c.shutdown(stop_pods=True)


def phase(c: EmbeddedCluster, name: str) -> str:
    return str(c.get_job("default", name)["phase"])


def test_a_job_runs_to_completion_and_its_log_is_kept(cluster: EmbeddedCluster, home: Path) -> None:
    cluster.apply(job("hello", replicas=2, command=["sh", "-c", "echo hello from $CALDERA_POD rank $VC_TASK_INDEX"]))
    wait_until(lambda: phase(cluster, "hello") == "Completed", timeout=30, what="the job to complete")
    summary = cluster.get_job("default", "hello")
    assert [p["phase"] for p in summary["pods"]] == ["Succeeded", "Succeeded"]
    log = (home / "pods" / "default" / "hello-worker-1" / "log").read_text()
    assert "hello from hello-worker-1" in log


def test_gang_on_virtual_nodes_one_job_runs_the_other_waits(cluster: EmbeddedCluster) -> None:
    sleeper = [
        sys.executable,
        "-c",
        "import signal, sys; signal.signal(signal.SIGTERM, lambda *a: sys.exit(0)); signal.pause()",
    ]
    cluster.apply(job("a", replicas=4, gpus=1, command=sleeper))
    cluster.apply(job("b", replicas=4, gpus=1, command=sleeper))
    wait_until(lambda: phase(cluster, "a") == "Running", timeout=30, what="job a to run")
    b = cluster.get_job("default", "b")
    assert all(p["phase"] == "Pending" and not p["node"] for p in b["pods"]), b
    nodes = {n["name"]: n for n in cluster.list_nodes()}
    assert all(n["gpusUsed"] == 2 and n["virtualGpus"] for n in nodes.values())
    cluster.delete_job("default", "a")
    wait_until(lambda: phase(cluster, "b") == "Running", timeout=30, what="job b to run once a is gone")


def test_daemon_restart_adopts_running_pods(home: Path) -> None:
    first = EmbeddedCluster(home, nodes=1, cpus_per_node="2", memory_per_node="4Gi", grace=2.0)
    first.start()
    marker = home / "go"
    script = f"import os, pathlib\nwhile not pathlib.Path({str(marker)!r}).exists(): os.sched_yield() if False else __import__('select').select([], [], [], 0.05)\nprint('done')"
    first.apply(job("long", command=[sys.executable, "-c", script]))
    wait_until(lambda: phase(first, "long") == "Running", timeout=30, what="the job to run")
    first.shutdown(stop_pods=False)  # the daemon goes; its pod keeps running
    second = EmbeddedCluster(home, grace=2.0)
    second.start()
    try:
        assert phase(second, "long") == "Running"
        marker.write_text("go")
        wait_until(lambda: phase(second, "long") == "Completed", timeout=30, what="the adopted pod to finish")
        pod = second.get_job("default", "long")["pods"][0]
        assert pod["phase"] == "Succeeded" and pod["exitCode"] == 0 and pod["restarts"] == 0
    finally:
        second.shutdown(stop_pods=True)


def test_submit_data_is_linked_into_the_pod_directory(cluster: EmbeddedCluster, home: Path, tmp_path: Path) -> None:
    source = tmp_path / "dataset"
    source.mkdir()
    (source / "train.csv").write_text("x,y\n1,2\n")
    manifest = job("reader", command=["sh", "-c", "cat $CALDERA_POD_DIR/data/set/train.csv"])
    manifest["spec"]["tasks"][0]["template"]["metadata"] = {"annotations": {"caldera.dev/data": f"{source}:data/set"}}
    cluster.apply(manifest)
    wait_until(lambda: phase(cluster, "reader") == "Completed", timeout=30, what="the job to complete")
    assert "1,2" in (home / "pods" / "default" / "reader-worker-0" / "log").read_text()


def test_pods_that_ended_are_kept_across_a_daemon_restart_until_the_job_is_deleted(home: Path) -> None:
    """A job whose worker completes stops its server: a restarted daemon still lists it, with its end."""
    sleeper = [sys.executable, "-c", "import signal; signal.pause()"]
    manifest = job("ps", replicas=1, command=["python", "-c", "print('trained')"])
    server = {**manifest["spec"]["tasks"][0], "name": "server"}
    server["template"] = {"spec": {**server["template"]["spec"], "containers": [{"name": "main", "command": sleeper}]}}
    manifest["spec"]["tasks"] = [server, manifest["spec"]["tasks"][0]]
    manifest["spec"]["minAvailable"] = 2
    manifest["spec"]["policies"] = [{"event": "TaskCompleted", "action": "CompleteJob"}]
    first = EmbeddedCluster(home, nodes=1, cpus_per_node="2", memory_per_node="4Gi", grace=2.0)
    first.start()
    try:
        first.apply(manifest)
        wait_until(lambda: phase(first, "ps") == "Completed", timeout=30, what="the job to complete")
        wait_until(lambda: len(first.get_job("default", "ps")["pods"]) == 2, timeout=30, what="the server listed")
        before = first.get_job("default", "ps")["pods"]
    finally:
        first.shutdown(stop_pods=False)
    second = EmbeddedCluster(home, grace=2.0)
    second.start()
    try:
        after = second.get_job("default", "ps")["pods"]
        assert after == before
        assert [(p["name"], p["reason"]) for p in after] == [("ps-server-0", "Stopped"), ("ps-worker-0", "")]
        second.delete_job("default", "ps")
        wait_until(lambda: second.store.list("Pod") == [], timeout=30, what="the job's pod records to go")
    finally:
        second.shutdown(stop_pods=True)
