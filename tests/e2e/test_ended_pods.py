"""Pods that ended stay listed with their phase, exit code and log until their job is deleted.

A parameter-server job that completes stops its servers: they stay in `get` (Stopped, their exit
code) and `logs -i` still reads them. A whole-job restart stops every pod: each stays listed until
its successor of the same name exists, and `logs --previous` reads the attempt before the restart.
A job that failed for good keeps every pod it had, with how each ended.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from caldera.testing.waiting import wait_until

from .conftest import SLEEPER, Caldera, all_running

pytestmark = pytest.mark.e2e

# The server serves until stopped; the worker trains once the server is up.
SERVER_OR_WORKER = (
    'if [ "$CALDERA_TASK" = ps ]; then echo serving; touch up; exec python -c "import signal; signal.pause()"; '
    "else while [ ! -e up ]; do sleep 0.05; done; echo trained; fi"
)


def test_the_servers_of_a_completed_job_keep_their_phase_exit_code_and_log(caldera: Caldera, tmp_path: Path) -> None:
    caldera.up()
    caldera.ok(
        "submit", "tf", "--name", "t", "--ps", "1", "--workers", "1", "--working-dir", str(tmp_path),
        "--", "sh", "-c", SERVER_OR_WORKER,
    )  # fmt: skip
    caldera.wait_job("t", lambda j: j["phase"] == "Completed", "the job to complete")
    caldera.wait_job("t", lambda j: len(j["pods"]) == 2, "the stopped server to be listed")
    pods = {p["name"]: p for p in caldera.job("t")["pods"]}
    assert (pods["t-worker-0"]["phase"], pods["t-worker-0"]["exitCode"]) == ("Succeeded", 0)
    server = pods["t-ps-0"]
    assert (server["reason"], server["phase"], server["exitCode"]) == ("Stopped", "Failed", 143)  # SIGTERM
    rows = {line.split()[1]: line.split() for line in caldera.ok("get", "t").split("Instances")[1].splitlines()[2:]}
    assert rows["t-ps-0"][3] == "Stopped" and rows["t-worker-0"][3] == "Succeeded"
    assert "serving" in caldera.ok("logs", "t", "-i", "ps-0")
    # Until the job is deleted: a job created again under its name starts with none of them.
    caldera.ok("delete", "t")
    caldera.ok("submit", "tf", "--name", "t", "--ps", "1", "--workers", "1", "--", *SLEEPER)
    caldera.wait_job("t", all_running(2), "the new job's pods to run")
    assert [(p["name"], p["reason"], p["exitCode"]) for p in caldera.job("t")["pods"]] == [
        ("t-ps-0", "", None),
        ("t-worker-0", "", None),
    ]


RESTARTED = """
import os, pathlib, signal, sys, threading
tried, done = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
if os.environ["CALDERA_TASK"] == "master":
    if not tried.exists():
        tried.write_text("1")
        print("first try: failing", flush=True)
        sys.exit(1)
    print("second try: done", flush=True)
    done.write_text("1")
    sys.exit(0)
def slow_stop(*_):
    threading.Event().wait(2)  # a worker that takes its time to stop: the restart waits for it
    sys.exit(143)
signal.signal(signal.SIGTERM, slow_stop)
while not done.exists():
    threading.Event().wait(0.05)
"""


def test_every_pod_stays_listed_through_a_whole_job_restart(caldera: Caldera, tmp_path: Path) -> None:
    caldera.up()
    tried, done = tmp_path / "tried", tmp_path / "done"
    caldera.ok(
        "submit", "pytorch", "--name", "r", "--workers", "2", "--retry", "2", "--working-dir", str(tmp_path),
        "--", "python", "-c", RESTARTED, str(tried), str(done),
    )  # fmt: skip
    missing: list[tuple[str, list[str]]] = []

    def completed() -> bool:
        job = caldera.job("r")
        names = sorted(p["name"] for p in job["pods"])
        if names and names != ["r-master-0", "r-worker-0"]:
            missing.append((job["phase"], names))
        return bool(job["phase"] == "Completed")

    wait_until(completed, timeout=90, interval=0.02, what="the job to restart and complete")
    assert missing == [], missing
    assert caldera.job("r")["retryCount"] == 1
    assert caldera.ok("logs", "r").count("=== attempt ") == 2
    previous = caldera.ok("logs", "r", "--previous")
    assert "first try: failing" in previous and "second try" not in previous
    assert "second try: done" in caldera.ok("logs", "r", "--tail", "1")


def all_ended(job: dict[str, Any]) -> bool:
    return all(p["exitCode"] is not None for p in job["pods"])


def test_a_failed_job_keeps_every_pod_with_how_it_ended(caldera: Caldera, tmp_path: Path) -> None:
    caldera.up()
    # The master fails once its worker runs (a pod that never ran has no end to keep): in each attempt it waits
    # for the worker's mark, which it takes away for the next attempt.
    failing = (
        'if [ "$CALDERA_TASK" = master ]; then while [ ! -e worker-up ]; do sleep 0.05; done; rm worker-up;'
        ' echo giving up; exit 7; fi; touch worker-up; exec python -c "import signal; signal.pause()"'
    )
    caldera.ok(
        "submit", "pytorch", "--name", "f", "--workers", "2", "--retry", "1", "--working-dir", str(tmp_path),
        "--", "sh", "-c", failing,
    )  # fmt: skip
    caldera.wait_job("f", lambda j: j["phase"] == "Failed", "the job to fail for good")
    # Failed comes with the master's end; the worker is stopped then, and ends a moment later (till then it is
    # listed live, with no exit code).
    caldera.wait_job("f", lambda j: len(j["pods"]) == 2 and all_ended(j), "both pods to be listed, ended")
    pods = {p["name"]: p for p in caldera.job("f")["pods"]}
    assert (pods["f-master-0"]["phase"], pods["f-master-0"]["exitCode"]) == ("Failed", 7)
    assert (pods["f-worker-0"]["reason"], pods["f-worker-0"]["exitCode"]) == ("Stopped", 143)
    assert caldera.ok("logs", "f").count("giving up") == 2  # both attempts, before and after the restart
    assert caldera.ok("logs", "f", "-p").count("giving up") == 1
