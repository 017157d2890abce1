"""A daemon restarted while pods it asked to stop are still stopping finishes those stops, and counts
what the pods hold until they are gone (their SIGKILL timer died with the previous daemon)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from caldera.system.daemon import EmbeddedCluster
from caldera.testing.waiting import wait_until

from .kit import job, processes_under, small_cluster, wait_phase

GRACE = 20  # the lingering pods' terminationGracePeriodSeconds (ample for a daemon to go on a loaded machine); else ten minutes


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "caldera"


# Asked to stop, it takes ten minutes; it touches `ready` once SIGTERM is handled (a SIGTERM before that, while
# Python starts, would end it at once).
LINGER = (
    "import signal, sys, threading\n"
    "signal.signal(signal.SIGTERM, lambda *_: (threading.Event().wait(600), sys.exit(0)))\n"
    "open(sys.argv[1], 'w').close()\n"
    "signal.pause()\n"
)


def lingering(name: str, ready: Path, cpu: str = "100m") -> dict[str, Any]:
    """A job whose pod, asked to stop, takes ten minutes unless SIGKILLed after its grace."""
    manifest = job(name, ["python", "-c", LINGER, str(ready)])
    pod = manifest["spec"]["tasks"][0]["template"]["spec"]
    pod["terminationGracePeriodSeconds"] = GRACE
    pod["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return manifest


def stored_deletion(c: EmbeddedCluster, pod: str) -> object:
    stored = c.store.get("Pod", "default", pod)
    return None if stored is None else stored.body["metadata"].get("deletionTimestamp")


def test_a_pod_aborted_before_a_restart_is_still_killed_after_its_grace(home: Path, tmp_path: Path) -> None:
    go, ready = tmp_path / "go", tmp_path / "ready"
    manifest = lingering("abort", ready)
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
    first = small_cluster(home)
    try:
        first.apply(manifest)
        wait_until(ready.exists, timeout=60, what="the lingering pod to handle SIGTERM")
        go.touch()  # the other pod fails: AbortJob stops the lingering one, which takes its time
        wait_until(lambda: stored_deletion(first, "abort-worker-0") is not None, timeout=60, what="the abort's stop")
    finally:
        first.shutdown(stop_pods=False)  # the daemon goes before the pod has stopped
    assert processes_under(slow_dir), "the pod should still linger when the daemon goes"
    second = small_cluster(home)
    try:
        # Its stop is finished: SIGKILL once its grace (counted from its deletion) is over, not ten minutes later.
        wait_until(lambda: not processes_under(slow_dir), timeout=60, what="the aborted pod to be killed")
        wait_phase(second, "abort", "Aborted", timeout=60)
    finally:
        second.shutdown(stop_pods=True)
