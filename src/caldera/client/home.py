"""Finding a running daemon: the files it keeps under `$CALDERA_HOME`, read by its clients.

The daemon (`caldera.server.__main__`) writes `daemon.json` ({"pid", "url"}) once it
listens and removes it on exit, and keeps the API token in `token` (mode 0600). A
`daemon.json` whose pid is gone is stale (the daemon was killed with `kill -9`) and
means "not running". The server spells the same two file names on its side; a test
keeps the two in agreement.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from caldera.core.errors import CalderaError

DAEMON_FILE = "daemon.json"
TOKEN_FILE = "token"
LOG_FILE = "daemon.log"
DEFAULT_HOME = "~/.caldera"
NOT_RUNNING = "the caldera daemon is not running: start it with `caldera up`"


@dataclass(frozen=True, slots=True)
class DaemonInfo:
    """What `daemon.json` says: the daemon's process and where it listens."""

    pid: int
    url: str


def home_dir(home: Path | None = None) -> Path:
    """`home`, else `$CALDERA_HOME`, else `~/.caldera` (not created here)."""
    if home is not None:
        return home.expanduser()
    return Path(os.environ.get("CALDERA_HOME") or DEFAULT_HOME).expanduser()


def read_daemon(home: Path) -> DaemonInfo | None:
    """The daemon named by `home/daemon.json`, or None when the file is absent or unreadable."""
    try:
        raw = json.loads((home / DAEMON_FILE).read_text())
        return DaemonInfo(pid=int(raw["pid"]), url=str(raw["url"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_token(home: Path) -> str:
    path = home / TOKEN_FILE
    try:
        token = path.read_text().strip()
    except OSError as e:
        raise CalderaError(f"cannot read the API token {path}: {e.strerror or e}") from None
    if not token:
        raise CalderaError(f"the API token file {path} is empty: restart the daemon (`caldera down; caldera up`)")
    return token


def pid_alive(pid: int) -> bool:
    """Whether process `pid` still runs (a child of ours that exited is reaped, not counted; a zombie is dead)."""
    if pid <= 0:
        return False
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass  # not our child: ask the kernel below
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Whether `pid` has exited and waits for its parent to reap it. A daemon's parent is init, which may
    take seconds to reap it (or never, as PID 1 of a container that is not an init): it is gone all the same."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False  # no /proc (or it went meanwhile): kill(0) answered
    return stat[stat.rindex(b")") + 2 :].split()[:1] == [b"Z"]


def running_daemon(home: Path) -> DaemonInfo | None:
    """The daemon of `home` if its process is alive (it may still be starting or stopping)."""
    info = read_daemon(home)
    return info if info is not None and pid_alive(info.pid) else None
