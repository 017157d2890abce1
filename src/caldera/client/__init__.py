"""L3: the typed HTTP client of the daemon's REST API, and how to find the daemon.

`connect()` is what every CLI verb but `up` starts with: it reads
`$CALDERA_HOME/daemon.json` and the token, and fails with one clear line when no
daemon runs.
"""

from __future__ import annotations

from pathlib import Path

from caldera.client.home import NOT_RUNNING, DaemonInfo, home_dir, pid_alive, read_daemon, read_token, running_daemon
from caldera.client.http import UNAUTHORISED, Client
from caldera.core.errors import CalderaError

__all__ = [
    "NOT_RUNNING",
    "UNAUTHORISED",
    "Client",
    "DaemonInfo",
    "connect",
    "home_dir",
    "pid_alive",
    "read_daemon",
    "read_token",
    "running_daemon",
]


def connect(home: Path | None = None, timeout: float = 30.0) -> Client:
    """A client of the daemon serving `home` (default `$CALDERA_HOME`, else `~/.caldera`)."""
    where = home_dir(home)
    daemon = running_daemon(where)
    if daemon is None:
        raise CalderaError(NOT_RUNNING)
    return Client(daemon.url, read_token(where), timeout=timeout)
