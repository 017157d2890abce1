"""kill -9 of the daemon after it saved a pod's start and before it started the pod's process.

The window is hit every time: the daemon's fault hook (CALDERA_FAULT_KILL_BEFORE_START, off
unless a test sets it) SIGKILLs the daemon just before it starts the pod, after the commit.
Nothing of the user's ran, so it is not the user's failure: after `caldera up` the pod is
started (once), with no restart, no exit code and no retry counted, and a job that allows no
retry (`maxRetry: 0`, restartPolicy Never) runs to completion. Its `describe` says why it started late.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import httpx

from caldera.client import connect, pid_alive, read_daemon
from caldera.core.errors import CalderaError
from caldera.system.effects import KILL_BEFORE_START
from caldera.testing.waiting import wait_until

from .kit import Daemon, bring_down, processes_match, shims


def waits_for(path: Path) -> list[str]:
    """A pod that notes it started (one line per start), waits until `path` exists, and exits 0."""
    script = (
        "import os, select, sys\n"
        f"open({str(path) + '.started'!r}, 'a').write(str(os.getpid()) + '\\n')\n"
        f"while not os.path.exists({str(path)!r}):\n"
        "    select.select([], [], [], 0.05)\n"
    )
    return ["python", "-c", script]


def manifest(name: str, command: list[str]) -> dict[str, Any]:
    container = {"name": "main", "command": command, "resources": {"requests": {"cpu": "10m"}}}
    task = {
        "name": "worker",
        "replicas": 1,
        "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
    }
    spec = {"maxRetry": 0, "tasks": [task]}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def test_a_pod_whose_start_was_saved_but_not_done_is_started_after_a_restart(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path / "home")
    daemon.up("--nodes", "1", "--cpus-per-node", "2", "--memory-per-node", "4Gi",
              env={KILL_BEFORE_START: "default/victim-"})  # fmt: skip
    release = tmp_path / "release"
    left: list[str] = []
    try:
        info = read_daemon(daemon.home)
        assert info is not None
        with connect(daemon.home, timeout=60) as api, contextlib.suppress(CalderaError, httpx.HTTPError):
            # Saved, then answered or not: the starter thread kills the daemon as the answer leaves.
            api.apply(manifest("victim", waits_for(release)))
        wait_until(lambda: not pid_alive(info.pid), timeout=60, what="the daemon to kill itself before the start")
        assert not shims(daemon.home), "a process was started before the kill"
        assert not Path(str(release) + ".started").exists()

        daemon.up()
        with connect(daemon.home, timeout=60) as api:
            wait_until(lambda: Path(str(release) + ".started").exists(), timeout=120, what="the pod started")
            job = api.get_job("default", "victim")
            (pod,) = job["pods"]
            assert job["phase"] == "Running" and job["retryCount"] == 0, job
            assert pod["phase"] == "Running" and pod["restarts"] == 0 and pod["exitCode"] is None, pod
            processes_match(daemon, seed=0)
            events = api.describe_job("default", "victim")["events"]
            assert any(e["reason"] == "Started" and "started now" in e["message"] for e in events), events

            release.touch()

            def completed() -> bool:
                phase = api.get_job("default", "victim")["phase"]
                assert phase in ("Running", "Completing", "Completed"), phase
                return phase == "Completed"

            wait_until(completed, timeout=120, what="the job to complete")
            assert api.get_job("default", "victim")["retryCount"] == 0
        starts = Path(str(release) + ".started").read_text().split()
        assert len(starts) == 1, f"the pod ran {len(starts)} times"
    finally:
        left = bring_down(daemon)
    assert not left, f"processes left after `caldera down`: {left}"


def test_starts_queued_behind_the_killed_one_are_each_done_once_after_a_restart(tmp_path: Path) -> None:
    """Five pods decided in one turn: the starter threads start some, the daemon dies at 2's start with
    the others queued (a pod's starts are in order on one thread; other pods' threads may have started
    theirs). The restarted daemon adopts those that run and starts the rest, each once."""
    daemon = Daemon(tmp_path / "home")
    daemon.up("--nodes", "1", "--cpus-per-node", "4", "--memory-per-node", "4Gi",
              env={KILL_BEFORE_START: "default/five-worker-2"})  # fmt: skip
    release = tmp_path / "release"
    body = manifest("five", waits_for(release))
    body["spec"]["tasks"][0]["replicas"] = 5
    started = Path(str(release) + ".started")
    left: list[str] = []
    try:
        info = read_daemon(daemon.home)
        assert info is not None
        with connect(daemon.home, timeout=60) as api, contextlib.suppress(CalderaError, httpx.HTTPError):
            api.apply(body)
        wait_until(lambda: not pid_alive(info.pid), timeout=60, what="the daemon to kill itself at pod 2's start")
        assert "default/five-worker-2" not in shims(daemon.home)

        daemon.up()
        with connect(daemon.home, timeout=60) as api:
            wait_until(lambda: len(started.read_text().split()) == 5 if started.exists() else False,
                       timeout=120, what="all five pods started")  # fmt: skip
            processes_match(daemon, seed=0)
            pods = api.get_job("default", "five")["pods"]
            assert sorted(p["name"] for p in pods) == [f"five-worker-{i}" for i in range(5)]
            assert all(p["phase"] == "Running" and p["restarts"] == 0 for p in pods), pods
            release.touch()
            wait_until(lambda: api.get_job("default", "five")["phase"] == "Completed", timeout=120,
                       what="the job to complete")  # fmt: skip
        assert len(started.read_text().split()) == 5, "a pod ran twice"
    finally:
        left = bring_down(daemon)
    assert not left, f"processes left after `caldera down`: {left}"
