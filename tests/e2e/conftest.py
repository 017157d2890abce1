"""End to end: a real daemon started by `caldera up`, driven by the `caldera` command as a user drives it.

Every test gets its own CALDERA_HOME under tmp_path and runs the commands from the
repository root (so the examples' relative paths work). At the end the fixture runs
`caldera down` and fails the test if any process of that home outlives it: the daemon,
a pod's shim or a pod's process, found by the home's path in its command line, working
directory or environment. Whatever is found is killed (by pid) so nothing leaks into
the next test.

The commands are real processes (`caldera ...`). Waiting, and the few looks that need
what the commands do not print (event ids), read the API in-process: a `caldera get` per
poll would cost a third of a second of CPU.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from caldera.client import connect, pid_alive, read_daemon
from caldera.testing.processes import processes_of
from caldera.testing.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
_SCRIPT = Path(sys.executable).with_name("caldera")
CALDERA = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "caldera.cli.main"]

# A pod that sleeps until it is stopped (SIGTERM ends it), using no CPU meanwhile.
SLEEPER = ["python", "-c", "import signal; signal.pause()"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: end to end, with a real daemon and real pods (a few seconds each)")


def waits_for(path: Path, then: str) -> list[str]:
    """A pod's command that waits until `path` exists, then prints `then` and exits 0."""
    script = (
        "import os, select\n"
        f"while not os.path.exists({str(path)!r}):\n"
        "    select.select([], [], [], 0.05)\n"
        f"print({then!r})\n"
    )
    return ["python", "-c", script]


def job_manifest(
    name: str,
    command: list[str],
    *,
    replicas: int = 1,
    gpus: int = 0,
    queue: str | None = None,
    priority_class: str | None = None,
    min_available: int | None = None,
) -> dict[str, Any]:
    """A Volcano Job of one task of `replicas` pods running `command`, all in one gang by default."""
    requests = {"cpu": "100m", "memory": "64Mi", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    spec: dict[str, Any] = {
        "minAvailable": replicas if min_available is None else min_available,
        "tasks": [
            {
                "name": "worker",
                "replicas": replicas,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "command": command, "resources": {"requests": requests}}],
                    }
                },
            }
        ],
    }
    if queue:
        spec["queue"] = queue
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


@dataclass
class Caldera:
    """The `caldera` command against one home, and a few looks at what it leaves on disk."""

    home: Path

    def run(
        self, *args: str, input: str | None = None, timeout: float = 180.0, cwd: Path = REPO
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "CALDERA_HOME": str(self.home), "COLUMNS": "200"}
        env.pop("CALDERA_DEBUG", None)
        return subprocess.run(
            [*CALDERA, *args],
            cwd=cwd,
            env=env,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def ok(self, *args: str, input: str | None = None, timeout: float = 180.0, cwd: Path = REPO) -> str:
        """stdout of a command that must succeed."""
        r = self.run(*args, input=input, timeout=timeout, cwd=cwd)
        assert r.returncode == 0, f"caldera {' '.join(args)} → {r.returncode}\n{r.stderr}{self.daemon_log()}"
        return r.stdout

    def json(self, *args: str) -> Any:
        """The verb's `-o json`; of a `List`, its items (as `jq .items`)."""
        data = json.loads(self.ok(*args, "-o", "json"))
        return data["items"] if isinstance(data, dict) and data.get("kind") == "List" else data

    def apply(self, manifest: dict[str, Any] | str) -> str:
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        return self.ok("apply", "-f", "-", input=text)

    def up(self, *args: str) -> str:
        out = self.ok("up", *args)
        assert out.startswith("caldera is up at "), out
        return out

    @property
    def daemon_pid(self) -> int:
        daemon = read_daemon(self.home)
        assert daemon is not None, f"no daemon.json in {self.home}"
        return daemon.pid

    def job(self, name: str) -> dict[str, Any]:
        """The job's summary, read through the API (cheap enough to poll)."""
        with connect(self.home) as client:
            return client.get_job("default", name)

    def describe(self, name: str) -> dict[str, Any]:
        with connect(self.home) as client:
            return client.describe_job("default", name)

    def events(self) -> list[dict[str, Any]]:
        """Every event the daemon stored, in order (with ids), read through the API."""
        with connect(self.home) as client:
            return client.events()

    def wait_job(self, name: str, done: Callable[[dict[str, Any]], object], what: str, timeout: float = 60.0) -> None:
        try:
            wait_until(lambda: done(self.job(name)), timeout=timeout, what=what, interval=0.05)
        except AssertionError as e:
            raise AssertionError(f"{e}; job {name} is {self.job(name)}{self.daemon_log()}") from None

    def pod_dir(self, pod: str) -> Path:
        return self.home / "pods" / "default" / pod

    def pod_log(self, pod: str) -> str:
        return (self.pod_dir(pod) / "log").read_text(errors="replace")

    def daemon_log(self, lines: int = 30) -> str:
        try:
            tail = (self.home / "daemon.log").read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "\n--- daemon.log (end) ---\n" + "\n".join(tail)


def running_pods(job: dict[str, Any]) -> list[str]:
    return [p["name"] for p in job["pods"] if p["phase"] == "Running"]


def all_running(replicas: int) -> Callable[[dict[str, Any]], bool]:
    return lambda job: len(running_pods(job)) == replicas


def unschedulable(cal: Caldera, job: str) -> bool:
    """Whether the scheduler has tried the job's gang and left it out (its PodGroup's Unschedulable condition)."""
    pg = cal.describe(job)["podgroup"] or {}
    return any(c.get("type") == "Unschedulable" for c in (pg.get("status") or {}).get("conditions") or [])


def kill_leftovers(home: Path) -> list[str]:
    """SIGKILL what is left of `home`'s processes; what was found."""
    left = processes_of(home)
    for line in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)
    return left


def bring_down(cal: Caldera) -> None:
    """`caldera down`, then make sure nothing of the home is left (failing the test if something was)."""
    try:
        down = cal.run("down")
        assert down.returncode == 0, down.stderr + cal.daemon_log()
        assert down.stdout in ("caldera is down\n", "caldera is not running\n"), down.stdout
    finally:
        daemon = read_daemon(cal.home)
        if daemon is not None and pid_alive(daemon.pid):
            os.kill(daemon.pid, signal.SIGKILL)
        try:
            wait_until(lambda: not processes_of(cal.home), timeout=30, what="the home's processes to end")
        except AssertionError:
            left = kill_leftovers(cal.home)
            pytest.fail(f"processes left behind after `caldera down`: {left}")


@pytest.fixture
def caldera(tmp_path: Path) -> Iterator[Caldera]:
    """`caldera` over a fresh home (the test starts the daemon); brought down and checked at the end."""
    cal = Caldera(tmp_path / "home")
    try:
        yield cal
    finally:
        bring_down(cal)
