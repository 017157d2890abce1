"""The embedded cluster's submit-to-all-running latency for a 16-pod gang, and the idle daemon's CPU and memory.

A daemon is started with `caldera up --nodes 4` in a temporary CALDERA_HOME. A Job of
16 pods (minAvailable 16, tiny requests), each a Python process that sleeps until it is
stopped, is applied through the API; the latency runs from just before that call to the
first `get` that shows all 16 pods Running (polled every millisecond or so); also shown,
until every pod's command has started (its shim has a child). The job is
deleted, its processes waited for, and the measure repeated; the median is reported
(goal: <= 1 s on a 2-core machine).

Then, with no job, the daemon's CPU time (utime + stime of /proc/<pid>/stat) over
`--idle` seconds, as a percentage of one core, and its resident memory (VmRSS of
/proc/<pid>/status). `caldera down` at the end, whatever happened.

    python benchmarks/embedded_latency.py [--pods 16] [--nodes 4] [--repeat 5] [--idle 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from caldera.client import Client, connect, read_daemon

CALDERA = [sys.executable, "-m", "caldera.cli.main"]
SLEEPER = ["python", "-c", "import signal; signal.pause()"]  # `sleep 60` that also ends on SIGTERM at once


def manifest(name: str, pods: int) -> dict[str, Any]:
    container = {"name": "main", "command": SLEEPER, "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": pods,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": pods,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
                }
            ],
        },
    }


def caldera(home: Path, *args: str) -> str:
    env = {**os.environ, "CALDERA_HOME": str(home)}
    return subprocess.run([*CALDERA, *args], env=env, check=True, capture_output=True, text=True).stdout.strip()


def running(client: Client, name: str) -> int:
    return sum(p["phase"] == "Running" for p in client.get_job("default", name)["pods"])


def started(home: Path, name: str) -> int:
    """How many of the job's pods have their command running: a shim (proc.json) with a child."""
    count = 0
    for proc in (home / "pods" / "default").glob(f"{name}-*/proc.json"):
        try:
            shim = json.loads(proc.read_text())["pid"]
            count += bool(Path(f"/proc/{shim}/task/{shim}/children").read_text().split())
        except (OSError, ValueError, KeyError):
            pass  # being written, or gone
    return count


def submit_to_running(client: Client, home: Path, name: str, pods: int, timeout: float = 60.0) -> tuple[float, float]:
    """Seconds from just before the apply to the first `get` showing every pod Running, and to every command started."""
    start = time.perf_counter()
    client.apply(manifest(name, pods), submit_dir=str(home))
    while running(client, name) < pods:
        if time.perf_counter() - start > timeout:
            raise SystemExit(f"job {name}: not all {pods} pods running after {timeout:g}s")
        time.sleep(0.001)
    shown = time.perf_counter() - start
    while started(home, name) < pods:
        if time.perf_counter() - start > timeout:
            raise SystemExit(f"job {name}: not all {pods} commands started after {timeout:g}s")
        time.sleep(0.001)
    return shown, time.perf_counter() - start


def delete_and_wait(client: Client, home: Path, name: str, timeout: float = 60.0) -> None:
    """Delete the job and wait until none of its pods' processes is left (no proc.json in their directories)."""
    client.delete_job("default", name)
    deadline = time.perf_counter() + timeout
    while any((home / "pods" / "default").glob(f"{name}-*/proc.json")) or any(
        j["name"] == name for j in client.list_jobs()
    ):
        if time.perf_counter() > deadline:
            raise SystemExit(f"job {name}: pods still running {timeout:g}s after its deletion")
        time.sleep(0.01)


def cpu_seconds(pid: int) -> float:
    """utime + stime of process `pid` (all its threads), in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    fields = stat[stat.rindex(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmRSS for process {pid}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pods", type=int, default=16)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of idle to measure CPU over")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="caldera-bench-") as tmp:
        home = Path(tmp) / "home"
        print(caldera(home, "up", "--nodes", str(args.nodes)), flush=True)
        try:
            daemon = read_daemon(home)
            assert daemon is not None
            latencies, commands = [], []
            with connect(home) as client:
                for i in range(args.repeat):
                    name = f"bench-{i}"
                    shown, up = submit_to_running(client, home, name, args.pods)
                    latencies.append(shown)
                    commands.append(up)
                    print(
                        f"  run {i + 1}: {args.pods} pods Running {shown * 1000:.0f} ms after submit"
                        f" (their commands started: {up * 1000:.0f} ms)"
                    )
                    delete_and_wait(client, home, name)
            median = statistics.median(latencies)
            verdict = "meets" if median <= 1.0 else "misses"
            print(
                f"submit-to-all-running, {args.pods} pods on {args.nodes} nodes: median {median * 1000:.0f} ms "
                f"(min {min(latencies) * 1000:.0f}, max {max(latencies) * 1000:.0f}; {verdict} the 1 s goal); "
                f"every command started: median {statistics.median(commands) * 1000:.0f} ms"
            )

            before, t0 = cpu_seconds(daemon.pid), time.perf_counter()
            time.sleep(args.idle)
            used, wall = cpu_seconds(daemon.pid) - before, time.perf_counter() - t0
            print(
                f"idle daemon: CPU {used / wall * 100:.2f}% of one core over {wall:.0f} s, RSS {rss_mib(daemon.pid):.0f} MiB"
            )
        finally:
            print(caldera(home, "down"))


if __name__ == "__main__":
    main()
