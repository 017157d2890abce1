"""The daemon's files under `$CALDERA_HOME`, on the writing side.

  token        the API token (secrets.token_urlsafe), mode 0600, kept across restarts
  daemon.json  {"pid", "url"}: written atomically once the socket listens, removed on exit
  server.lock  held (flock) while a daemon serves this home: one daemon per home
The client (`caldera.client.home`) reads the first two under the same names.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
from pathlib import Path
from typing import IO

from caldera.core.errors import CalderaError

DAEMON_FILE = "daemon.json"
TOKEN_FILE = "token"
LOCK_FILE = "server.lock"


def prepare_home(home: Path) -> Path:
    home = home.expanduser().resolve()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    return home


def load_or_create_token(home: Path) -> str:
    """The token in `home/token`, created on first use; the file is (made) private to its owner."""
    path = home / TOKEN_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        token = path.read_text().strip()
        if token:
            return token
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


def lock_home(home: Path) -> IO[str]:
    """Hold the home's lock for as long as the returned file stays open (released on any exit)."""
    f = (home / LOCK_FILE).open("a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise CalderaError(f"another caldera daemon already serves {home}") from None
    return f


def write_daemon_file(home: Path, url: str) -> None:
    """`daemon.json` for this process, replaced in one step so a reader never sees half of it."""
    tmp = home / f".{DAEMON_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"pid": os.getpid(), "url": url}) + "\n")
    os.replace(tmp, home / DAEMON_FILE)


def remove_daemon_file(home: Path) -> None:
    """Remove `daemon.json` if it is this process's (a newer daemon's file is left alone)."""
    path = home / DAEMON_FILE
    with contextlib.suppress(OSError, ValueError):
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
