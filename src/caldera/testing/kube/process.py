"""One child process of the test control plane (apiserver, KWOK, a scheduler, ...): started, watched, stopped.

Its output goes to a log file; it is stopped by its own PID (SIGTERM, a grace period, SIGKILL),
idempotently, and it is started through the launcher's PR_SET_PDEATHSIG shim, so it is killed too
if the Python process that started it dies without cleaning up (the signal fires when the thread
that started it ends: start processes from the main thread, as tests and benchmarks do); `ensure_running` turns an early exit into one error with the tail of the log, so a
bad flag or a taken port reads as a message rather than a later time-out. The environment is
the caller's without proxy variables (everything here is loopback). `cpu_seconds` reads the
process's user + system time from /proc, for the benchmarks.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from caldera.launcher.workers import shimmed

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class ProcessError(Exception):
    """A control-plane process could not be started or died."""


class Process:
    """A named child process writing to `log_file`."""

    def __init__(self, name: str, command: Sequence[str], log_file: Path, env: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.command = list(command)
        self.log_file = log_file
        self._env = env
        self._popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        if self._popen is not None:
            raise ProcessError(f"{self.name} was already started (pid {self.pid})")
        env = {k: v for k, v in os.environ.items() if k not in PROXY_VARIABLES}
        env.update(self._env or {})
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            try:
                self._popen = subprocess.Popen(
                    shimmed(self.command), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
                )
            except OSError as e:
                raise ProcessError(f"cannot run {self.name} ({self.command[0]}): {e.strerror or e}") from None
        return self

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen is not None else None

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def ensure_running(self) -> None:
        """ProcessError with the log's tail if the process was started and has exited."""
        if self._popen is None:
            raise ProcessError(f"{self.name} was not started")
        code = self._popen.poll()
        if code is not None:
            raise ProcessError(
                f"{self.name} exited with code {code}; its log ({self.log_file}) ends with:\n{self.log_tail()}"
            )

    def stop(self, grace: float = 10.0) -> int | None:
        """End the process: SIGTERM, up to `grace` seconds, then SIGKILL. Its exit code (None if never started)."""
        popen = self._popen
        if popen is None:
            return None
        if popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                popen.send_signal(signal.SIGTERM)
            try:
                popen.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    popen.kill()
                popen.wait()
        return popen.returncode

    def cpu_seconds(self) -> float:
        """User + system CPU time the running process has used so far (from /proc/PID/stat)."""
        if self._popen is None:
            raise ProcessError(f"{self.name} was not started")
        return cpu_seconds(self._popen.pid)

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` (its threads included, its children not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError as e:
        raise ProcessError(f"cannot read the CPU time of pid {pid}: {e.strerror or e}") from None
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state is fields[0]
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / CLOCK_TICKS
