"""The daemon killed with `kill -9` mid-job and started again: the job finishes, with one history.

Of the job's two pods, one ends while no daemon watches (its outcome must be recorded from what
its shim left), the other is still running when the new daemon starts (it must be adopted, not
run again). Neither may be duplicated, restarted or lost.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from caldera.client import pid_alive
from caldera.testing.waiting import wait_until

from .conftest import Caldera, processes_of, waits_for

pytestmark = pytest.mark.e2e


def two_pods(early: list[str], late: list[str]) -> dict[str, Any]:
    def task(name: str, command: list[str]) -> dict[str, Any]:
        container = {"name": "main", "command": command, "resources": {"requests": {"cpu": "100m"}}}
        return {
            "name": name,
            "replicas": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        }

    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "survivor"},
        "spec": {"minAvailable": 2, "tasks": [task("early", early), task("late", late)]},
    }


def shim_pid(pod_dir: Path) -> int:
    # Running means the start is saved; the daemon's starter thread spawns the shim a moment later.
    wait_until((pod_dir / "proc.json").exists, timeout=30, what=f"the shim of {pod_dir.name}")
    return int(json.loads((pod_dir / "proc.json").read_text())["pid"])


def test_a_job_outlives_its_daemon_killed_with_sigkill(caldera: Caldera, tmp_path: Path) -> None:
    caldera.up("--nodes", "2")
    early_go, late_go = tmp_path / "early-go", tmp_path / "late-go"
    caldera.apply(two_pods(waits_for(early_go, "early done"), waits_for(late_go, "late done")))
    assert caldera.ok("wait", "survivor", "--for", "Running", "--timeout", "60") == "job default/survivor is Running\n"
    late_shim = shim_pid(caldera.pod_dir("survivor-late-0"))

    daemon = caldera.daemon_pid
    os.kill(daemon, signal.SIGKILL)
    wait_until(lambda: not pid_alive(daemon), timeout=30, what="the killed daemon to be gone")
    # With no daemon, the early pod ends: its shim records how.
    early_go.touch()
    wait_until((caldera.pod_dir("survivor-early-0") / "exit").exists, timeout=30, what="the early pod to end")
    assert caldera.run("get", "survivor").stderr.startswith("caldera: error: ")  # nobody answers meanwhile

    assert caldera.up().endswith("2 nodes)\n")  # the nodes of the last start
    job = caldera.json("get", "survivor")
    assert job["phase"] == "Running", job
    assert [(p["name"], p["phase"], p["exitCode"], p["restarts"]) for p in job["pods"]] == [
        ("survivor-early-0", "Succeeded", 0, 0),
        ("survivor-late-0", "Running", None, 0),
    ]
    assert shim_pid(caldera.pod_dir("survivor-late-0")) == late_shim  # adopted, not started again

    late_go.touch()
    assert caldera.ok("wait", "survivor", "--timeout", "60") == "job default/survivor is Completed\n"
    job = caldera.json("get", "survivor")
    assert (job["phase"], job["retryCount"]) == ("Completed", 0), job
    assert [(p["name"], p["phase"], p["exitCode"], p["restarts"]) for p in job["pods"]] == [
        ("survivor-early-0", "Succeeded", 0, 0),
        ("survivor-late-0", "Succeeded", 0, 0),
    ]
    # One history: each pod bound once, ended once, ran one attempt; the job ran and completed once.
    events = caldera.json("describe", "survivor")["events"]
    seen = [(e["kind"], e["object"], e["reason"]) for e in events if e["kind"] in ("Bind", "PodPhase", "JobPhase")]
    assert seen.count(("JobPhase", "survivor", "Running")) == 1, events
    assert seen.count(("JobPhase", "survivor", "Completed")) == 1, events
    for pod in ("survivor-early-0", "survivor-late-0"):
        assert [s for s in seen if s[1] == pod] == [("Bind", pod, ""), ("PodPhase", pod, "Succeeded")], events
        log = caldera.pod_log(pod)
        assert log.count("=== attempt ") == 1 and log.count(" done\n") == 1, log

    assert caldera.ok("down") == "caldera is down\n"
    assert processes_of(caldera.home) == []
