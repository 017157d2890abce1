"""What the daemon tests share: a job manifest builder, a cluster of one small node, looks at processes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from caldera.system.daemon import EmbeddedCluster
from caldera.testing.waiting import wait_until

# A pod that sleeps until it is stopped, and then takes `linger` seconds to go (a slow shutdown).
LINGER = (
    "import signal, sys, threading\n"
    "def stop(*_):\n"
    "    threading.Event().wait({linger})\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, stop)\n"
    "signal.pause()\n"
)


def job(
    name: str, command: list[str], *, replicas: int = 1, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    requests = {"cpu": "100m", "memory": "64Mi"}
    container = {"name": "main", "command": command, "resources": {"requests": requests}}
    task = {
        "name": "worker",
        "replicas": replicas,
        "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
    }
    meta: dict[str, Any] = {"name": name, **({"annotations": annotations} if annotations else {})}
    spec = {"minAvailable": replicas, "tasks": [task]}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": meta, "spec": spec}


def sleeper(linger: float = 0.0) -> list[str]:
    return ["python", "-c", LINGER.format(linger=linger)]


def small_cluster(home: Path) -> EmbeddedCluster:
    c = EmbeddedCluster(home, nodes=1, cpus_per_node="2", memory_per_node="4Gi", grace=5.0)
    c.start()
    return c


@contextmanager
def running(home: Path) -> Iterator[EmbeddedCluster]:
    """`small_cluster` on `home`, shut down with its pods stopped on leaving."""
    c = small_cluster(home)
    try:
        yield c
    finally:
        c.shutdown(stop_pods=True)


def phase(c: EmbeddedCluster, name: str) -> str:
    return str(c.get_job("default", name)["phase"])


def wait_phase(c: EmbeddedCluster, name: str, want: str, timeout: float = 30.0) -> None:
    wait_until(lambda: phase(c, name) == want, timeout=timeout, what=f"job {name} to be {want}")


def processes_under(path: Path) -> list[int]:
    """Live processes whose command line or working directory names `path`."""
    needle, found = str(path), []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = Path(entry.path, "stat").read_bytes()
            cwd = os.readlink(Path(entry.path, "cwd"))
        except OSError:
            continue
        if stat[stat.rindex(b")") + 2 :].startswith(b"Z"):
            continue
        if needle in cmdline or cwd == needle or cwd.startswith(needle + "/"):
            found.append(int(entry.name))
    return found
