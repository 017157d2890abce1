"""Real launcher processes (`python -m caldera.launcher`) against a real etcd, for the integration tests.

Each launcher runs `worker.py` as its training command, in pod `pod` (CALDERA_POD_NAME), with its
stdout and stderr in `<workdir>/<pod>.log` (several launchers of one pod append to one file).
`close` kills whatever a test left running (launchers by PID, then the workers they recorded) and
reports what had to be killed, so a leak fails the test instead of the next one.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from caldera.launcher.main import STILL_CLOSING
from caldera.launcher.settings import OPTIONS
from caldera.testing.waiting import wait_until

WORKER = Path(__file__).with_name("worker.py")
_SETTINGS_ENV = {env for option in OPTIONS for env in option.envs}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):  # a zombie is dead for our purposes
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


@dataclass
class Launcher:
    pod: str
    proc: subprocess.Popen[bytes]
    log: Path
    mark: int  # where this launcher's lines start in the pod's log

    def lines(self) -> list[str]:
        text = self.log.read_text(errors="replace")[self.mark :] if self.log.exists() else ""
        return [line for line in text.splitlines() if line.startswith("caldera-launch ")]

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines())

    def when(self, text: str, timeout: float = 10.0) -> float:
        """The wall-clock time of the first line containing `text` (waited for: a worker's own report of a
        round can come before its launcher's line about it, which waits for the worker's pid)."""
        wait_until(lambda: self.said(text), timeout=timeout, what=f"launcher {self.pod} to log {text!r}")
        line = next(line for line in self.lines() if text in line)
        return datetime.strptime(line.split()[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()

    def wait(self, timeout: float = 30.0) -> int:
        wait_until(lambda: self.proc.poll() is not None, timeout=timeout, what=f"launcher {self.pod} to exit")
        # It ended, but did it close? One that hung after deciding its exit ends on its own after a while and says
        # so, with its threads' stacks (`launcher.main.exit_within`): a bug, shown here with where it hung.
        text = self.log.read_text(errors="replace")[self.mark :] if self.log.exists() else ""
        assert STILL_CLOSING not in text, text[-6000:]
        return int(self.proc.returncode)


@dataclass
class Launchers:
    endpoint: str
    job: str
    workdir: Path
    started_launchers: list[Launcher] = field(default_factory=list)

    def start(
        self,
        pod: str,
        *,
        np: str = "3",
        ttl: int = 2,
        elastic_timeout: float | None = 30.0,  # None: not configured
        max_restarts: int = 3,
        server: str | None = None,
        job: str | None = None,
        preload: str = "json",
    ) -> Launcher:
        argv = [
            sys.executable, "-m", "caldera.launcher",
            "--elastic-server", server or self.endpoint,
            "--job-id", job or self.job,
            "--np", np,
            "--ttl", str(ttl),
            "--max-restarts", str(max_restarts),
            "--grace", "2",
            "--preload", preload,  # warm spares on every test, with a module that imports in no time
            *(["--elastic-timeout", str(elastic_timeout)] if elastic_timeout is not None else []),
            "--", sys.executable, str(WORKER), str(self.workdir),
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k not in _SETTINGS_ENV}
        env["CALDERA_POD_NAME"] = pod
        log = self.workdir / f"{pod}.log"
        mark = log.stat().st_size if log.exists() else 0
        with log.open("ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=out, stdin=subprocess.DEVNULL, env=env)
        launcher = Launcher(pod, proc, log, mark)
        self.started_launchers.append(launcher)
        return launcher

    def started(self, pod: str, round_: int, local: int = 0) -> dict[str, object] | None:
        path = self.workdir / f"{pod}-r{round_}-l{local}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def wait_started(self, pods: list[str], round_: int, timeout: float = 30.0) -> list[dict[str, object]]:
        wait_until(
            lambda: all(self.started(p, round_) for p in pods),
            timeout=timeout,
            what=f"workers of {', '.join(pods)} in round {round_}",
            interval=0.02,
        )
        return [self.started(p, round_) or {} for p in pods]

    def latest_round(self, pods: list[str], world: int) -> int | None:
        """The highest round in which every pod of `pods` started a worker of a world of `world` processes."""
        rounds = [
            n
            for n in range(64)
            if all((e := self.started(p, n)) is not None and e["WORLD_SIZE"] == str(world) for p in pods)
        ]
        return max(rounds, default=None)

    def release(self, code: int = 0, pod: str | None = None, round_: int | None = None) -> None:
        name = "exit" + (f"-{pod}" if pod else "") + (f"-r{round_}" if round_ is not None else "")
        (self.workdir / name).write_text(str(code))

    def worker_pids(self) -> list[int]:
        return [int(json.loads(p.read_text())["pid"]) for p in self.workdir.glob("*-r*-l*.json")]

    def close(self) -> list[str]:
        """Kill what is left (launchers, then workers, by PID); what had to be killed."""
        leaks = []
        for launcher in self.started_launchers:
            if launcher.proc.poll() is None:
                leaks.append(f"launcher {launcher.pod} (pid {launcher.proc.pid})")
                launcher.proc.kill()
            launcher.proc.wait()
        for pid in self.worker_pids():
            if alive(pid):
                # give PDEATHSIG a moment to act on workers of the launchers just killed
                with contextlib.suppress(AssertionError):
                    wait_until(lambda pid=pid: not alive(pid), timeout=5, what=f"worker {pid} to die")
            if alive(pid):
                leaks.append(f"worker pid {pid}")
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        return leaks
