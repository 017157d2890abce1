"""A deleted job leaves nothing behind: a new job of the same name starts with clean logs and attempt 0."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from caldera.system.api import NotFound
from caldera.system.daemon import EmbeddedCluster
from caldera.testing.waiting import wait_until

from .kit import job, processes_under, running, sleeper, small_cluster, wait_phase


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "caldera"


@pytest.fixture
def cluster(home: Path) -> Iterator[EmbeddedCluster]:
    with running(home) as c:
        yield c


def log_of(home: Path, pod: str) -> str:
    return (home / "pods" / "default" / pod / "log").read_text()


def test_a_new_job_of_a_deleted_ones_name_starts_clean(cluster: EmbeddedCluster, home: Path) -> None:
    cluster.apply(job("again", ["sh", "-c", "echo first run"]))
    wait_phase(cluster, "again", "Completed")
    pod_dir = home / "pods" / "default" / "again-worker-0"
    assert "first run" in log_of(home, "again-worker-0")
    scaled_in = home / "pods" / "default" / "again-worker-5"  # as a pod of an elastic task scaled in leaves it
    scaled_in.mkdir()
    cluster.delete_job("default", "again")
    # Both go in one clean-up pass, one directory after the other: wait for the pass to end.
    wait_until(
        lambda: not pod_dir.exists() and not scaled_in.exists(), timeout=30, what="the deleted job's pod directories"
    )
    cluster.apply(job("again", ["sh", "-c", "echo second run"]))
    wait_phase(cluster, "again", "Completed")
    log = log_of(home, "again-worker-0")
    assert "first run" not in log and "second run" in log
    assert log.startswith("=== attempt 0 started"), log
    stored = cluster.store.get("Pod", "default", "again-worker-0")
    assert stored is not None and stored.body["caldera"]["attempt"] == 0


def test_submitting_while_the_old_pods_stop_waits_for_them(cluster: EmbeddedCluster, home: Path) -> None:
    cluster.apply(job("slow", sleeper(linger=1.0), replicas=2))
    wait_phase(cluster, "slow", "Running")
    # Running: the start is saved and queued; the starter thread starts the process a moment later.
    wait_until(
        lambda: processes_under(home / "pods" / "default" / "slow-worker-0"), timeout=30, what="the first pod's process"
    )
    old = processes_under(home / "pods" / "default" / "slow-worker-0")
    cluster.delete_job("default", "slow")
    # The old pods take a second to stop: the new job is created once they are gone, not beside them.
    cluster.apply(job("slow", ["sh", "-c", "echo fresh"], replicas=2))
    assert not any(pid in processes_under(home / "pods") for pid in old)
    wait_phase(cluster, "slow", "Completed")
    for pod in ("slow-worker-0", "slow-worker-1"):
        log = log_of(home, pod)
        assert log.startswith("=== attempt 0 started") and log.count("=== attempt") == 1, log


def test_a_restarted_daemon_finishes_what_a_delete_started(home: Path) -> None:
    first = small_cluster(home)
    first.apply(job("gone", sleeper(linger=1.0)))
    wait_phase(first, "gone", "Running")
    pod_dir = home / "pods" / "default" / "gone-worker-0"
    first.delete_job("default", "gone")
    first.shutdown(stop_pods=False)  # the daemon goes before its pod has stopped
    assert first.store.path.exists()
    second = small_cluster(home)
    try:
        # The pod's record is dropped, its process stopped, its directory removed.
        wait_until(lambda: not pod_dir.exists(), timeout=30, what="the deleted job's pod directory to go")
        assert not processes_under(home / "pods"), "the deleted job's pod should be stopped"
        # Its record goes with the write after its end (the directory may go a turn earlier).
        wait_until(
            lambda: second.store.get("Pod", "default", "gone-worker-0") is None, timeout=30, what="its record to go"
        )
        second.apply(job("gone", ["sh", "-c", "echo new"]))
        wait_phase(second, "gone", "Completed")
        assert log_of(home, "gone-worker-0").startswith("=== attempt 0 started")
    finally:
        second.shutdown(stop_pods=True)


def test_restart_keeps_the_directories_of_the_jobs_that_remain(home: Path) -> None:
    first = small_cluster(home)
    first.apply(job("kept", ["sh", "-c", "echo kept"]))
    wait_phase(first, "kept", "Completed")
    stray = home / "pods" / "default" / "nobody-worker-0"  # no job owns it (left by a crash)
    stray.mkdir(parents=True)
    first.shutdown(stop_pods=False)
    second = small_cluster(home)
    try:
        wait_until(lambda: not stray.exists(), timeout=30, what="the unowned directory to go")
        assert "kept" in log_of(home, "kept-worker-0")
        assert second.get_job("default", "kept")["phase"] == "Completed"
    finally:
        second.shutdown(stop_pods=True)


def test_a_deleted_job_leaves_nothing_under_its_key(cluster: EmbeddedCluster, home: Path) -> None:
    """A long-lived daemon sees thousands of jobs come and go: none of them may leave state behind
    (tracemalloc found each job's pod attempts, pod dictionary and touch count kept for ever)."""
    cluster.apply(job("brief", ["true"]))
    wait_phase(cluster, "brief", "Completed")
    plane = cluster.plane
    assert "default/brief" in plane.job_pods and plane.attempts_of("default/brief-worker-0") == 1
    cluster.delete_job("default", "brief")
    wait_until(lambda: not (home / "pods" / "default" / "brief-worker-0").exists(), timeout=30, what="the pod's dir")

    def kept() -> list[str]:
        return cluster._read(  # on the loop, which owns these
            lambda: [
                name
                for name, held in (
                    ("job_pods", "default/brief" in plane.job_pods),
                    ("touch count", "default/brief" in plane._changes),
                    ("attempt number", plane.attempts_of("default/brief-worker-0") != 0),
                    ("finished attempts", bool(plane.attempts)),
                    ("runtime attempt", "default/brief-worker-0" in cluster.runtime.attempts),
                )
                if held
            ]
        )

    assert kept() == []


def test_a_job_deleted_by_its_ttl_frees_its_host_ports_as_a_deleted_one_does(cluster: EmbeddedCluster) -> None:
    for name in ("by-ttl", "by-hand"):
        manifest = job(name, ["sh", "-c", "true"])
        manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 8080}]
        if name == "by-ttl":
            manifest["spec"]["ttlSecondsAfterFinished"] = 0
        cluster.apply(manifest)
    wait_phase(cluster, "by-hand", "Completed")
    assert cluster.runtime.ports.holds("default/by-hand")
    cluster.delete_job("default", "by-hand")
    wait_until(lambda: gone(cluster, "by-ttl"), timeout=60, what="the TTL's deletion")
    assert not cluster.runtime.ports.holds("default/by-ttl")
    assert not cluster.runtime.ports.holds("default/by-hand")


def gone(cluster: EmbeddedCluster, name: str) -> bool:
    try:
        cluster.get_job("default", name)
    except NotFound:
        return True
    return False
