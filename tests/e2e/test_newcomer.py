"""What a newcomer meets, on a real daemon: bytecode kept out of the sources, the SDK, completion, the API docs."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from caldera.testing.waiting import wait_until
from caldera.utils.clock import SystemClock

from .conftest import CALDERA, Caldera, job_manifest

pytestmark = pytest.mark.e2e


def completed(job: dict[str, object]) -> bool:
    return job["phase"] == "Completed"


def test_pods_write_no_bytecode_next_to_the_sources_they_import(caldera: Caldera, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "helper.py").write_text("VALUE = 42\n")
    # The pod imports a module of the user's and caldera's launcher, as an elastic pod does.
    command = ["python", "-c", "import helper, caldera.launcher.main; print('value', helper.VALUE)"]
    manifest = job_manifest("pyc", command)
    manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["workingDir"] = str(src)
    caldera.up()
    caldera.apply(manifest)
    caldera.wait_job("pyc", completed, "the job to complete")
    assert "value 42" in caldera.pod_log("pyc-worker-0")
    assert not (src / "__pycache__").exists()
    cached = [p.relative_to(caldera.home / "pycache") for p in (caldera.home / "pycache").rglob("*.pyc")]
    assert any(p.name.startswith("helper.") for p in cached), cached
    assert any("launcher" in p.parts and p.name.startswith("main.") for p in cached), cached


NOTEBOOK = """
import caldera.jobs
from caldera.client import connect

job = caldera.jobs.pytorch(name="nb", workers=2, cpu="100m",
                           command=["python", "-c", "import os; print('rank', os.environ['RANK'])"])
with connect() as client:
    client.apply(job)
    done = client.wait_job("default", "nb", timeout=120)
    print("phase", done["phase"], "pods", len(done["pods"]))
    print("".join(client.stream_log("default", "nb-worker-0")).splitlines()[-1])
"""


def test_the_sdk_from_a_notebook_like_process(caldera: Caldera, tmp_path: Path) -> None:
    caldera.up()
    env = {**os.environ, "CALDERA_HOME": str(caldera.home)}
    r = subprocess.run(
        [sys.executable, "-c", NOTEBOOK],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["phase Completed pods 2", "rank 1"]


def test_shell_completion_names_the_daemons_jobs(caldera: Caldera) -> None:
    caldera.up()
    caldera.apply(job_manifest("train", ["true"]))
    caldera.apply(job_manifest("tune", ["true"]))
    env = {**os.environ, "CALDERA_HOME": str(caldera.home), "_CALDERA_COMPLETE": "bash_complete"}
    env |= {"COMP_WORDS": "caldera logs t", "COMP_CWORD": "2"}
    r = subprocess.run([*CALDERA, "logs", "t"], check=False, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["plain,train", "plain,tune"]


def test_caldera_docs_prints_where_the_api_docs_are_and_never_the_token(caldera: Caldera) -> None:
    caldera.up()
    url = caldera.ok("docs").strip()
    assert url.startswith("http://127.0.0.1:") and url.endswith("/docs")
    assert (caldera.home / "token").read_text().strip() not in url
    with httpx.Client(timeout=30, follow_redirects=False) as browser:
        assert browser.get(url).headers["location"] == "/login?next=/docs"  # the dashboard's login first


def test_logs_since_and_timestamps_on_a_real_pod(caldera: Caldera, tmp_path: Path) -> None:
    go = tmp_path / "go"
    script = (
        "import os, select\n"
        "print('first', flush=True)\n"
        f"while not os.path.exists({str(go)!r}):\n"
        "    select.select([], [], [], 0.05)\n"
        "print('second', flush=True)\n"
    )
    caldera.up()
    caldera.apply(job_manifest("timed", ["python", "-c", script]))
    wait_until(lambda: "first" in caldera.pod_log("timed-worker-0") if caldera.pod_dir("timed-worker-0").exists() else False,
               timeout=60, what="the first line")  # fmt: skip
    between = SystemClock().now()
    wait_until(lambda: SystemClock().now() > between + 0.01, timeout=5, what="a moment to pass", interval=0.005)
    go.touch()
    caldera.wait_job("timed", lambda j: j["phase"] == "Completed", "the job to complete")
    stamped = caldera.ok("logs", "timed", "--timestamps").splitlines()
    assert [line.split(" ", 1)[1] for line in stamped][-2:] == ["first", "second"]
    times = [datetime.fromisoformat(line.split(" ", 1)[0].replace("Z", "+00:00")).timestamp() for line in stamped]
    assert times == sorted(times) and times[-2] <= between < times[-1]
    since = datetime.fromtimestamp(between, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert caldera.ok("logs", "timed", "--since-time", since) == "second\n"
    assert caldera.ok("logs", "timed", "--since", "1h").endswith("first\nsecond\n")
