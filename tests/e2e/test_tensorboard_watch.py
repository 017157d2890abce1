"""TensorBoard for a submitted job, and `caldera list -w`, as a user runs them (real daemon, real processes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from caldera.testing.waiting import wait_until

from .conftest import CALDERA, REPO, SLEEPER, Caldera, job_manifest

pytestmark = pytest.mark.e2e

# The job writes a real TensorBoard run (torch's SummaryWriter) under its logdir.
WRITE_RUN = (
    "from torch.utils.tensorboard import SummaryWriter\n"
    "w = SummaryWriter('runs/exp')\n"
    "for step in range(5):\n"
    "    w.add_scalar('loss', 1.0 / (step + 1), step)\n"
    "w.close()\n"
    "print('wrote runs/exp')\n"
)


DEFAULT_SIGINT_EXEC = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
)


def get(url: str) -> tuple[int, bytes] | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return int(r.status), r.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def test_submit_with_tensorboard_serves_the_run_until_delete(caldera: Caldera, tmp_path: Path) -> None:
    caldera.up()
    out = caldera.ok(
        "submit", "pytorch", "--name", "tb", "--workers", "1", "--working-dir", str(tmp_path),
        "--tensorboard", "--logdir", "runs", "--", "python", "-c", WRITE_RUN,
    )  # fmt: skip
    assert "tb" in out
    url = caldera.ok("tensorboard", "tb").strip()
    assert url.startswith("http://127.0.0.1:")
    assert caldera.json("get", "tb")["tensorboard"] == url
    assert any(line.split() == ["TensorBoard:", url] for line in caldera.ok("describe", "tb").splitlines())
    caldera.wait_job("tb", lambda j: j["phase"] == "Completed", "the job to complete", timeout=120)
    # A real TensorBoard: its page answers, and it has read the run the job wrote.
    wait_until(lambda: (get(url) or (0, b""))[0] == 200, timeout=60, what="TensorBoard to answer", interval=0.2)
    wait_until(
        lambda: "exp" in json.loads((get(f"{url}/data/runs") or (0, b"[]"))[1] or b"[]"),
        timeout=60,
        what="TensorBoard to list the job's run",
        interval=0.5,
    )
    caldera.ok("delete", "tb")
    wait_until(lambda: get(url) is None, timeout=30, what="TensorBoard to stop with its job", interval=0.1)
    wait_until(lambda: not (caldera.home / "jobs" / "default" / "tb").exists(), timeout=30, what="its directory to go")


def test_down_stops_the_tensorboards(caldera: Caldera, tmp_path: Path) -> None:
    caldera.up()
    manifest = job_manifest("kept", ["sh", "-c", "echo done"])
    manifest["metadata"]["annotations"] = {"caldera.dev/tensorboard-logdir": str(tmp_path / "runs")}
    caldera.apply(manifest)
    url = caldera.ok("tensorboard", "kept").strip()
    wait_until(lambda: get(url) is not None, timeout=60, what="TensorBoard to answer", interval=0.2)
    assert caldera.ok("down") == "caldera is down\n"
    assert get(url) is None  # and the fixture checks that no process of the home is left


def test_list_watch_shows_a_job_from_submit_to_completed(caldera: Caldera) -> None:
    caldera.up()
    env = {**os.environ, "CALDERA_HOME": str(caldera.home), "COLUMNS": "200"}
    # As a terminal starts it: SIGINT at its default (a shell running the tests in the background
    # ignores SIGINT, and an ignored signal stays ignored across exec).
    argv = [sys.executable, "-c", DEFAULT_SIGINT_EXEC, *CALDERA, "list", "-w"]
    watcher = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[list[str]] = []
    seen = threading.Condition()

    def read() -> None:
        assert watcher.stdout is not None
        for line in watcher.stdout:
            with seen:
                lines.append(line.split())
                seen.notify_all()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_until(lambda: bool(lines), timeout=30, what="the header", condition=seen)
        assert lines[0] == ["NAME", "TYPE", "QUEUE", "PHASE", "RUNNING", "RETRIES", "MIN", "AGE", "DURATION", "REASON"]
        caldera.apply(job_manifest("greedy", SLEEPER, gpus=1))  # a machine without GPUs: it can never run
        wait_until(
            lambda: any(row[:4] == ["greedy", "-", "default", "Pending"] and row[-1] == "NeverFits" for row in lines),
            timeout=60,
            what="the row saying why greedy waits",
            condition=seen,
        )
        caldera.ok("delete", "greedy")
        caldera.apply(job_manifest("watched", ["sh", "-c", "echo hi"], replicas=2))
        wait_until(
            lambda: any(row[:4] == ["watched", "-", "default", "Completed"] for row in lines),
            timeout=60,
            what="the Completed row",
            condition=seen,
        )
        caldera.ok("delete", "watched")
        wait_until(
            lambda: lines[-1][:4] == ["watched", "-", "-", "Deleted"], timeout=30, what="the row", condition=seen
        )
    finally:
        watcher.send_signal(signal.SIGINT)
        try:
            _, err = watcher.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            watcher.kill()  # never leak it into the next test
            watcher.communicate()
            raise
        reader.join(timeout=10)
    phases = [row[3] for row in lines[1:] if row[0] == "watched"]
    assert phases[-2:] == ["Completed", "Deleted"] and "Running" in phases, lines
    assert watcher.returncode == 130 and "Traceback" not in err, err
