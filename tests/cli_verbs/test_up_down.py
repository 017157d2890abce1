"""`caldera up` and `caldera down` with real processes: a daemon over a fake cluster (`fake_daemon`).

Only the cluster is fake: the process is started detached, writes its token and
daemon.json, serves real HTTP, and stops on `down` or SIGTERM as the real daemon does.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from caldera.cli.common import CliContext
from caldera.client import pid_alive, read_daemon
from caldera.testing.waiting import wait_until

from .conftest import cli
from .manifests import job, to_yaml

ROOT = Path(__file__).resolve().parents[2]
FAKE_DAEMON = "tests.cli_verbs.fake_daemon"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh $CALDERA_HOME; any daemon a test leaves behind is stopped (by its pid) afterwards."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    where = tmp_path / "home"
    yield where
    daemon = read_daemon(where)
    if daemon is not None and pid_alive(daemon.pid):
        os.kill(daemon.pid, signal.SIGKILL)
        wait_exit(daemon.pid)


def caldera(home: Path, *args: str, input: str | None = None, daemon: str = FAKE_DAEMON) -> Result:
    obj = CliContext(home=home, server_module=daemon)
    return CliRunner().invoke(cli, list(args), obj=obj, input=input)


def wait_exit(pid: int, timeout: float = 30.0) -> None:
    """Reap our child `pid`, failing if it has not exited within `timeout` (no polling)."""
    reaper = threading.Thread(target=os.waitpid, args=(pid, 0), daemon=True)
    reaper.start()
    reaper.join(timeout)
    assert not reaper.is_alive(), f"process {pid} did not exit"


def test_up_use_down(home: Path) -> None:
    r = caldera(home, "up", "--nodes", "2")
    assert r.exit_code == 0, r.stderr
    daemon = read_daemon(home)
    assert daemon is not None and pid_alive(daemon.pid)
    assert r.stdout == f"caldera is up at {daemon.url} (home {home.resolve()}, 2 nodes)\n"
    assert daemon.url.startswith("http://127.0.0.1:")
    assert stat.S_IMODE((home / "token").stat().st_mode) == 0o600

    assert caldera(home, "apply", "-f", "-", input=to_yaml(job())).stdout == "job.batch.volcano.sh/train created\n"
    assert json.loads(caldera(home, "list", "-o", "json").stdout)["items"][0]["name"] == "train"

    again = caldera(home, "up", "--nodes", "3")
    assert again.exit_code == 0
    assert again.stdout == f"caldera is already up at {daemon.url} (home {home.resolve()}, 2 nodes)\n"
    assert "apply to a new daemon" in again.stderr
    assert read_daemon(home) == daemon

    down = caldera(home, "down")
    assert down.exit_code == 0 and down.stdout == "caldera is down\n"
    assert not pid_alive(daemon.pid) and read_daemon(home) is None
    assert "fake cluster shut down (stop_pods=True)" in (home / "daemon.log").read_text()
    assert caldera(home, "down").stdout == "caldera is not running\n"
    assert caldera(home, "list").stderr == (
        "caldera: error: the caldera daemon is not running: start it with `caldera up`\n"
    )


def test_sigterm_stops_the_daemon_and_leaves_pods_running(home: Path) -> None:
    assert caldera(home, "up").exit_code == 0
    daemon = read_daemon(home)
    assert daemon is not None
    os.kill(daemon.pid, signal.SIGTERM)
    wait_exit(daemon.pid)
    assert read_daemon(home) is None
    assert "fake cluster shut down (stop_pods=False)" in (home / "daemon.log").read_text()


def test_a_stale_daemon_file_is_not_a_daemon(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "daemon.json").write_text(json.dumps({"pid": 2**22 + 4321, "url": "http://127.0.0.1:1"}))
    assert caldera(home, "down").stdout == "caldera is not running\n"
    assert not (home / "daemon.json").exists()
    (home / "daemon.json").write_text(json.dumps({"pid": 2**22 + 4321, "url": "http://127.0.0.1:1"}))
    r = caldera(home, "up")
    assert r.exit_code == 0 and r.stdout.startswith("caldera is up at ")
    assert caldera(home, "down").exit_code == 0


def test_a_daemon_that_fails_at_start(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALDERA_FAKE_DAEMON_FAIL", "1")
    r = caldera(home, "up")
    assert r.exit_code == 2
    assert r.stderr == (
        "caldera: error: the daemon stopped at start: caldera: error: the fake cluster is broken on purpose "
        f"(see {home.resolve() / 'daemon.log'})\n"
    )
    assert read_daemon(home) is None


def test_one_daemon_per_home(home: Path) -> None:
    assert caldera(home, "up").exit_code == 0
    second = subprocess.run(
        [sys.executable, "-m", FAKE_DAEMON, "--home", str(home)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 1
    assert second.stderr.strip().endswith(f"another caldera daemon already serves {home.resolve()}")
    assert caldera(home, "down").exit_code == 0


def test_a_port_in_use(home: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        r = caldera(home, "up", "--port", str(taken.getsockname()[1]))
    assert r.exit_code == 2 and "cannot listen on 127.0.0.1:" in r.stderr


TWO_PODS = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: hello}
spec:
  minAvailable: 2
  tasks:
  - name: master
    replicas: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{name: main, image: none, command: [sh, -c, "echo master says hello"]}]
  - name: worker
    replicas: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{name: main, image: none, command: [sh, -c, "echo worker says hello"]}]
"""


def test_a_job_on_the_embedded_cluster(home: Path) -> None:
    """The real daemon (`python -m caldera.server`), end to end through the verbs."""
    r = caldera(home, "up", "--nodes", "2", "--gpus-per-node", "1", daemon="caldera.server")
    assert r.exit_code == 0, r.stderr + (home / "daemon.log").read_text()
    try:
        assert r.stdout.endswith(f"(home {home.resolve()}, 2 nodes)\n")
        assert caldera(home, "apply", "-f", "-", input=TWO_PODS).stdout == "job.batch.volcano.sh/hello created\n"
        waited = caldera(home, "wait", "hello", "--timeout", "120")
        assert waited.exit_code == 0, waited.stderr
        assert "master says hello" in caldera(home, "logs", "hello").stdout
        assert "worker says hello" in caldera(home, "logs", "hello", "-i", "worker-0", "-f").stdout
        summary = json.loads(caldera(home, "get", "hello", "-o", "json").stdout)
        assert summary["phase"] == "Completed"
        assert [(p["name"], p["phase"], p["exitCode"]) for p in summary["pods"]] == [
            ("hello-master-0", "Succeeded", 0),
            ("hello-worker-0", "Succeeded", 0),
        ]
        assert "(virtual)" in caldera(home, "top", "node").stdout
    finally:
        down = caldera(home, "down")
    assert down.exit_code == 0 and down.stdout == "caldera is down\n"
    assert read_daemon(home) is None


GANG_OF_TWO_GPUS = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: pair}
spec:
  minAvailable: 2
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        restartPolicy: Never
        containers:
        - {name: main, image: none, command: [sleep, "600"], resources: {limits: {nvidia.com/gpu: 1}}}
"""


def test_the_daemon_schedules_with_the_policy_it_was_given(home: Path) -> None:
    """`up --policy fifo-nogang` (kube-scheduler's pod-by-pod FIFO): half of a gang that cannot all fit runs."""
    r = caldera(home, "up", "--gpus-per-node", "1", "--policy", "fifo-nogang", daemon="caldera.server")
    assert r.exit_code == 0, r.stderr + (home / "daemon.log").read_text()
    try:
        assert caldera(home, "apply", "-f", "-", input=GANG_OF_TWO_GPUS).exit_code == 0

        def phases() -> list[str]:
            return [p["phase"] for p in json.loads(caldera(home, "get", "pair", "-o", "json").stdout)["pods"]]

        wait_until(lambda: sorted(phases()) == ["Pending", "Running"], timeout=60, what="one pod of the two running")
    finally:
        assert caldera(home, "down").exit_code == 0


def test_the_built_in_policy_keeps_a_gang_whole(home: Path) -> None:
    r = caldera(home, "up", "--gpus-per-node", "1", daemon="caldera.server")
    assert r.exit_code == 0, r.stderr + (home / "daemon.log").read_text()
    try:
        assert caldera(home, "apply", "-f", "-", input=GANG_OF_TWO_GPUS).exit_code == 0
        reason = caldera(home, "describe", "pair")
        wait_until(lambda: "NeverFits" in caldera(home, "describe", "pair").stdout, timeout=60, what="the gang refused")
        assert reason.exit_code == 0
        assert all(
            p["phase"] == "Pending" for p in json.loads(caldera(home, "get", "pair", "-o", "json").stdout)["pods"]
        )
    finally:
        assert caldera(home, "down").exit_code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "nope"], "--policy: unknown policy 'nope' (known: fifo-nogang, kube-default,"),
        (["--policy", "srtf"], "--policy: srtf is the simulator's yardstick: it reads each job's run time"),
        (["--policy", "las", "--scheduler-config", "x.yaml"], "give --policy or --scheduler-config, not both"),
        (["--scheduler-config", "missing.yaml"], "missing.yaml: --scheduler-config: cannot read the file"),
        (["--scheduler-config", "{bad}"], "plugin 'nosuch'"),
    ],
)
def test_a_wrong_policy_is_refused_before_a_daemon_starts(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text('actions: "allocate"\ntiers:\n- plugins:\n  - name: nosuch\n')
    monkeypatch.chdir(tmp_path)
    r = caldera(home, "up", *[str(bad) if a == "{bad}" else a for a in args], daemon="caldera.server")
    assert r.exit_code == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert read_daemon(home) is None
