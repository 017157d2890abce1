"""A daemon restarted while pods it asked to stop are still stopping finishes those stops, and counts
what the pods hold until they are gone (their SIGKILL timer died with the previous daemon)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from caldera.controller import make_pod
from caldera.core import objects as o
from caldera.core.jobmanifest import parse_job
from caldera.system import persist
from caldera.system.daemon import EmbeddedCluster
from caldera.system.runtime import GpuBook
from caldera.testing.waiting import wait_until

from .kit import job, processes_under, small_cluster, wait_phase

GRACE = 20  # the lingering pods' terminationGracePeriodSeconds (ample for a daemon to go on a loaded machine); else ten minutes


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "caldera"


# Asked to stop, it touches `<signals>/term` and takes ten minutes; it touches `<signals>/ready` once SIGTERM is
# handled (a SIGTERM before that, while Python starts, would end it at once).
LINGER = (
    "import signal, sys, threading\n"
    "def stop(*_):\n"
    "    open(sys.argv[1] + '/term', 'w').close()\n"
    "    threading.Event().wait(600)\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, stop)\n"
    "open(sys.argv[1] + '/ready', 'w').close()\n"
    "signal.pause()\n"
)


def lingering(name: str, signals: Path, cpu: str = "100m") -> dict[str, Any]:
    """A job whose pod, asked to stop, takes ten minutes unless SIGKILLed after its grace."""
    manifest = job(name, ["python", "-c", LINGER, str(signals)])
    pod = manifest["spec"]["tasks"][0]["template"]["spec"]
    pod["terminationGracePeriodSeconds"] = GRACE
    pod["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return manifest


def left_stopping(
    home: Path, signals: Path, manifest: dict[str, Any], stop: Callable[[EmbeddedCluster], object], pod_dir: Path
) -> None:
    """Run `manifest` on a daemon, `stop` its lingering pod once the pod handles SIGTERM, and take the daemon down
    (its pods left running, as a daemon killed) while the pod lingers."""
    first = small_cluster(home)
    try:
        first.apply(manifest)
        wait_until((signals / "ready").exists, timeout=60, what="the lingering pod to handle SIGTERM")
        stop(first)
        wait_until((signals / "term").exists, timeout=60, what="the stop's SIGTERM")
    finally:
        first.shutdown(stop_pods=False)
    assert processes_under(pod_dir), "the pod should still linger when the daemon goes"


def test_a_pod_aborted_before_a_restart_is_still_killed_after_its_grace(home: Path, tmp_path: Path) -> None:
    go = tmp_path / "go"
    manifest = lingering("abort", tmp_path)
    manifest["spec"]["minAvailable"] = 2
    manifest["spec"]["policies"] = [{"event": "PodFailed", "action": "AbortJob"}]
    fails = f"while [ ! -e {go} ]; do sleep 0.05; done; exit 1"
    manifest["spec"]["tasks"].append(
        {
            "name": "fails",
            "replicas": 1,
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "command": ["sh", "-c", fails]}]}
            },
        }
    )
    slow_dir = home / "pods" / "default" / "abort-worker-0"
    # The other pod fails: AbortJob stops the lingering one, which takes its time.
    left_stopping(home, tmp_path, manifest, lambda _: go.touch(), slow_dir)
    second = small_cluster(home)
    try:
        # Its stop is finished: SIGKILL once its grace (counted from its deletion) is over, not ten minutes later.
        wait_until(lambda: not processes_under(slow_dir), timeout=60, what="the aborted pod to be killed")
        wait_phase(second, "abort", "Aborted", timeout=60)
    finally:
        second.shutdown(stop_pods=True)


def test_a_deleted_jobs_pod_still_stopping_at_a_restart_holds_its_node_until_it_is_gone(
    home: Path, tmp_path: Path
) -> None:
    big_dir = home / "pods" / "default" / "big-worker-0"
    manifest = lingering("big", tmp_path, cpu="2")  # the whole node
    left_stopping(home, tmp_path, manifest, lambda c: c.delete_job("default", "big"), big_dir)
    second = small_cluster(home)
    try:
        manifest = job("after", ["sh", "-c", "sleep 600"])
        manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
        second.apply(manifest)
        # Placed once the old pod is gone (SIGKILLed at the end of its grace), not beside it.
        wait_phase(second, "after", "Running", timeout=60)
        assert not processes_under(big_dir), "the new pod was placed on the CPUs the stopping one still held"
        wait_until(lambda: second.store.get("Pod", "default", "big-worker-0") is None, timeout=30, what="its record")
    finally:
        second.shutdown(stop_pods=True)


def test_a_stopping_pods_record_gives_back_the_pod_it_was_written_from() -> None:
    """What a restarted daemon rebuilds of a deleted job's pod writes the same record (the store's check)."""
    manifest = job("gone", ["sleep", "600"])
    spec = manifest["spec"]["tasks"][0]["template"]["spec"]
    spec.update(restartPolicy="OnFailure", terminationGracePeriodSeconds=7)
    spec["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "2"
    parsed = parse_job(manifest, "test")
    parsed.metadata.uid = "0000002a"
    pod = make_pod(parsed, parsed.spec.tasks[0], 0, 5, 100.0)
    pod.metadata.uid, pod.node_name, pod.deletion_timestamp = "0000002b", "node-0", 130.0
    # Restarted in place once (its last exit code stays), then deleted with its job.
    pod.status = o.PodStatus(o.POD_RUNNING, exit_code=1, start_time=101.0, restart_count=1, pod_ip="127.0.0.1")
    body = json.loads(json.dumps(persist.pod_record(pod, 3, {}, [4, 5])))
    found = persist.stopping_pod_from_record(body)
    assert found is not None
    again, attempt, gpus = found
    assert (attempt, gpus) == (3, [4, 5])
    assert again.spec.requests() == pod.spec.requests()
    assert again.spec.termination_grace_period_seconds == 7
    assert persist.pod_record(again, attempt, {}, gpus) == body


def test_restored_gpus_are_the_ids_the_pods_were_given() -> None:
    book = GpuBook({"node-0": 4}, {"node-0": 0})
    book.restore("default/late-0", "node-0", [2])  # given 2 by the previous daemon, whatever the order now
    book.restore("default/first-0", "node-0", [0, 3])
    assert book.assign("default/new-0", "node-0", 1) == [1]
    with pytest.raises(RuntimeError):
        book.assign("default/more-0", "node-0", 1)
    book.release("default/late-0")
    assert book.assign("default/more-0", "node-0", 1) == [2]
