"""What the fault trials share: a real daemon under a home of its own, and looks at the processes it leaves.

The daemon is started as a user starts it (`caldera up`), stopped as a user stops it (`caldera
down`), and killed as a crash kills it (SIGKILL of its pid). A trial's processes are found by the
home's path in their command line, working directory or environment, so a pod's grandchild that
left its process group (setsid) is found too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from caldera.client import connect, pid_alive, read_daemon
from caldera.testing.processes import processes_of
from caldera.testing.waiting import wait_until

_SCRIPT = Path(sys.executable).with_name("caldera")
CALDERA = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "caldera.cli.main"]


class Daemon:
    def __init__(self, home: Path) -> None:
        self.home = home

    def run(
        self, *args: str, timeout: float = 180.0, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        full = {**os.environ, "CALDERA_HOME": str(self.home), **(env or {})}
        return subprocess.run([*CALDERA, *args], env=full, capture_output=True, text=True, timeout=timeout, check=False)

    def up(self, *args: str, env: dict[str, str] | None = None) -> None:
        r = self.run("up", *args, env=env)
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
        # python -I -S shim.py DIR ..., or caldera-shim DIR ...
        at = next((i for i, w in enumerate(words[:4]) if w.endswith(("/shim.py", "/caldera-shim"))), None)
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


def processes_match(daemon: Daemon, seed: int) -> None:
    """Wait until every pod the daemon says runs has exactly one shim and no other pod has one; no pod ever two."""
    seen: dict[str, object] = {}
    with connect(daemon.home, timeout=60) as api:

        def consistent() -> bool:
            pods = {f"{j['namespace']}/{p['name']}": p for j in api.list_jobs() for p in j["pods"]}
            running = {k for k, p in pods.items() if p["phase"] in ("Running", "Terminating")}
            counts = shims(daemon.home)
            assert all(c == 1 for c in counts.values()), f"seed {seed}: pods run twice: {counts}"
            seen["without a process"] = {k: pods[k] for k in running - set(counts)}
            seen["a process but not running"] = {k: pods.get(k) for k in set(counts) - running}
            return set(counts) == running

        try:
            wait_until(consistent, timeout=60, what="a process for every running pod and none other")
        except AssertionError as e:
            raise AssertionError(f"seed {seed}: {e}: {seen}{daemon.log()}") from None


@contextlib.contextmanager
def small_filesystem(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `path` (a real filesystem that fills up); unmounted after.

    Mounting needs root (CAP_SYS_ADMIN): elsewhere the test is skipped, saying why."""
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs for a full disk (needs root): {r.stderr.strip()}")
    try:
        yield path
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True, check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)  # something still holds it


def fill(directory: Path) -> Path:
    """Fill the filesystem of `directory` with one file until writing fails with ENOSPC; that file."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for chunk in (1 << 20, 4096, 1):  # big writes, then what is left to the byte
            block = b"\0" * chunk
            while True:
                try:
                    os.write(fd, block)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return filler
