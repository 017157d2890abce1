"""What a test left running: the live processes that belong to a caldera home."""

from __future__ import annotations

import os
from pathlib import Path


def processes_of(home: Path) -> list[str]:
    """The live processes (but this one) with `home` in their command line, working directory or environment."""
    needle = str(home)
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = Path(entry.path, "environ").read_bytes().decode(errors="replace")
            cwd = os.readlink(Path(entry.path, "cwd"))
        except OSError:  # gone meanwhile, a zombie, or not ours to read
            continue
        if needle in cmdline or needle in environ or cwd == needle or cwd.startswith(needle + "/"):
            found.append(f"{entry.name}: {cmdline.strip()}")
    return found
