"""What the fault trials share: a real daemon under a home of its own, and looks at the processes it leaves.

The daemon is started as a user starts it (`caldera up`), stopped as a user stops it (`caldera
down`), and killed as a crash kills it (SIGKILL of its pid). A trial's processes are found by the
home's path in their command line, working directory or environment, so a pod's grandchild that
left its process group (setsid) is found too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from caldera.client import pid_alive, read_daemon
from caldera.testing.processes import processes_of
from caldera.testing.waiting import wait_until

_SCRIPT = Path(sys.executable).with_name("caldera")
CALDERA = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "caldera.cli.main"]


class Daemon:
    def __init__(self, home: Path) -> None:
        self.home = home

    def run(self, *args: str, timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "CALDERA_HOME": str(self.home)}
        return subprocess.run([*CALDERA, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False)

    def up(self, *args: str) -> None:
        r = self.run("up", *args)
        assert r.returncode == 0, f"caldera up → {r.returncode}\n{r.stderr}{self.log()}"

    def down(self) -> None:
        r = self.run("down")
        assert r.returncode == 0, f"caldera down → {r.returncode}\n{r.stderr}{self.log()}"

    def kill9(self) -> None:
        info = read_daemon(self.home)
        assert info is not None, f"no daemon.json in {self.home}"
        os.kill(info.pid, signal.SIGKILL)
        wait_until(lambda: not pid_alive(info.pid), timeout=30, what="the killed daemon to be gone")

    def log(self, lines: int = 40) -> str:
        try:
            tail = (self.home / "daemon.log").read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "\n--- daemon.log (end) ---\n" + "\n".join(tail)


def shims(home: Path) -> dict[str, int]:
    """Pod key → how many live shims run it (more than one is a pod run twice)."""
    counts: dict[str, int] = {}
    pods = str(home / "pods") + "/"
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
            state = Path(entry.path, "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        words = [a.decode(errors="replace") for a in argv]
        at = next((i for i, w in enumerate(words[:4]) if w.endswith("/shim.py")), None)  # python -I -S shim.py DIR
        if state == b"Z" or at is None or len(words) <= at + 1 or not words[at + 1].startswith(pods):
            continue
        key = words[at + 1][len(pods) :]
        counts[key] = counts.get(key, 0) + 1
    return counts


def bring_down(daemon: Daemon) -> list[str]:
    """`caldera down`; then what of the home is still alive after a generous wait (killed, and returned)."""
    daemon.down()
    info = read_daemon(daemon.home)
    if info is not None and pid_alive(info.pid):
        os.kill(info.pid, signal.SIGKILL)
    try:
        wait_until(lambda: not processes_of(daemon.home), timeout=30, what="the home's processes to end")
    except AssertionError:
        left = processes_of(daemon.home)
        for line in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)
        return left
    return []
