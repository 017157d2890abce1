"""A pod that fails at once, restartPolicy OnFailure: it backs off as the kubelet does and says CrashLoopBackOff.

Before the back-off it restarted ~140 times in 8 s and `list` said Running. Now: restarted at
once the first time, then after 10 s, 20 s, ...; `list` and `get` say CrashLoopBackOff; `logs
--previous` shows the attempt before the last.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from caldera.testing.waiting import wait_until

from .conftest import Caldera, job_manifest

pytestmark = pytest.mark.e2e


def crashing(name: str, counter: Path) -> dict[str, Any]:
    """A pod that prints which run it is (counting in `counter`), then fails."""
    script = (
        "import pathlib, sys\n"
        f"p = pathlib.Path({str(counter)!r})\n"
        "n = int(p.read_text()) if p.exists() else 0\n"
        "p.write_text(str(n + 1))\n"
        "print(f'run {n}', flush=True)\n"
        "sys.exit(3)\n"
    )
    manifest = job_manifest(name, ["python", "-c", script])
    manifest["spec"]["tasks"][0]["template"]["spec"]["restartPolicy"] = "OnFailure"
    return manifest


def test_a_crash_loop_backs_off_and_says_so(caldera: Caldera, tmp_path: Path) -> None:
    caldera.up()
    counter = tmp_path / "runs"
    caldera.apply(crashing("loop", counter))
    pod = "loop-worker-0"
    caldera.wait_job(
        "loop", lambda j: j["pods"] and j["pods"][0]["reason"] == "CrashLoopBackOff", "the pod to back off"
    )
    job = caldera.job("loop")
    assert job["phase"] == "Running" and job["pods"][0]["phase"] == "Running"  # as the kubelet: Running, waiting
    assert job["waiting"]["reason"] == "CrashLoopBackOff"
    assert job["pods"][0]["exitCode"] == 3

    row = caldera.ok("list").splitlines()[1].split()
    assert (row[0], row[-1]) == ("loop", "CrashLoopBackOff")
    instances = caldera.ok("get", "loop").split("Instances")[1]
    assert "CrashLoopBackOff" in instances

    # The attempt before the last, as kubectl logs --previous.
    def previous_is_one_before_the_last() -> bool:
        runs = [line for line in caldera.ok("logs", "loop").splitlines() if line.startswith("run ")]
        previous = caldera.ok("logs", "loop", "--previous").splitlines()
        return len(runs) >= 2 and previous[0].startswith("=== attempt ") and previous[1:] == [runs[-2]]

    wait_until(previous_is_one_before_the_last, timeout=30, what="logs --previous to show the attempt before the last")

    # The back-off as the daemon timed it: at once, then each restart 10 s, 20 s, ... after the crash before it.
    runs = int(counter.read_text())  # read first: a restart may come while the events are read
    events = [e for e in caldera.events() if e["object"] == pod and e["kind"] in ("BackOff", "PodRestart")]
    restarts = [e["time"] for e in events if e["kind"] == "PodRestart"]
    backoffs = [e for e in events if e["kind"] == "BackOff"]
    assert backoffs[0]["message"] == "back-off 10s restarting failed container (exit code 3)"
    assert events[0]["kind"] == "PodRestart"  # the first restart is at once
    for k, (crash, restart) in enumerate(zip(backoffs, restarts[1:], strict=False)):
        assert restart - crash["time"] >= 10 * 2**k - 0.01, events
    assert runs <= len(restarts) + 1  # no run the daemon did not time
