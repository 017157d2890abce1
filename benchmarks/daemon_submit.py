"""The embedded daemon under many clients: 1,000 single-pod jobs submitted through the REST API by 16 at once.

A daemon is started with `caldera up --nodes 4` in a temporary CALDERA_HOME. 16 client
threads, each with its own HTTP connection, POST `--jobs` single-pod Volcano Jobs between
them (a pod runs `true`, requesting 10m CPU and 16Mi). Times, all of the whole request as a
client sees it (an answer means the job is in the store: the daemon commits before it replies):

- submissions per second: the jobs divided by the wall time from the first POST to the last answer;
- submit latency: each POST, from just before it is sent to its answer (p50, p99, max);
- all completed: from the first POST until a list shows every job Completed (polled every 0.1 s);
- the daemon's CPU per submission: its utime + stime over the submissions, divided by them (on a
  loaded machine the wall-clock figures measure the load; this one much less);
- the clients' CPU per submission: this process's (the 16 client threads, httpx) over the same window.
  They run on the same cores as the daemon: at ~2 ms each, 200 submissions/s take 0.4 of a core;
- the daemon's CPU per job over its whole life: from the first POST until all completed, divided by
  the jobs. Pods started sooner move their work into the submission window; this total does not move
  with it (it includes the list polled every 0.1 s to see them completed).

Then every job is deleted (16 clients again) and, once the list is empty and every pod directory
is gone, the daemon's resident memory (VmRSS) is read. The whole round is done `--rounds` times
in the same daemon: memory after each round's deletion, next to the memory before the first,
says whether it is flat. `caldera down` at the end, whatever happened.

With `--sleep S` each pod runs `sleep S` instead of `true`: pods then outlive the submissions, and
once S × submissions/s passes what the nodes hold (`--nodes 4` splits the machine's CPUs: 200 pods
of 10m on 2 cores; `--sleep 5` does it) the cluster is full, jobs wait and every scheduling cycle
tries preempt and reclaim for them, as when people submit more than fits.

    python benchmarks/daemon_submit.py [--jobs 1000] [--clients 16] [--nodes 4] [--rounds 3] [--sleep 0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from caldera.client import Client, connect, read_daemon

CALDERA = [sys.executable, "-m", "caldera.cli.main"]


def manifest(name: str, sleep: float = 0.0) -> dict[str, Any]:
    command = ["sleep", f"{sleep:g}"] if sleep > 0 else ["true"]
    container = {"name": "main", "command": command, "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}
    task = {
        "name": "worker",
        "replicas": 1,
        "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"tasks": [task]},
    }


def caldera(home: Path, *args: str) -> str:
    env = {**os.environ, "CALDERA_HOME": str(home)}
    return subprocess.run([*CALDERA, *args], env=env, check=True, capture_output=True, text=True).stdout.strip()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmRSS for process {pid}")


def in_parallel(home: Path, clients: int, names: list[str], call: Callable[[Client, str], object]) -> list[float]:
    """`call(client, name)` for every name, spread over `clients` threads; each call's seconds."""
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def work(mine: list[str]) -> None:
        with connect(home, timeout=120) as client:
            for name in mine:
                start = time.perf_counter()
                try:
                    call(client, name)
                except Exception as e:  # counted: the goal is every one accepted
                    with lock:
                        failures.append(f"{name}: {e}")
                    continue
                with lock:
                    latencies.append(time.perf_counter() - start)

    threads = [threading.Thread(target=work, args=(names[i::clients],)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        print(f"  {len(failures)} requests failed, e.g. {failures[0]}")
    return latencies


def wait_for(what: str, done: Callable[[], bool], timeout: float = 600.0) -> float:
    start = time.perf_counter()
    while not done():
        if time.perf_counter() - start > timeout:
            raise SystemExit(f"{what}: not after {timeout:g}s")
        time.sleep(0.1)
    return time.perf_counter() - start


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    fields = stat[stat.rindex(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_round(home: Path, client: Client, args: argparse.Namespace, r: int, pid: int) -> dict[str, float]:
    names = [f"r{r}-job-{i}" for i in range(args.jobs)]
    cpu, clients_cpu, start = cpu_seconds(pid), time.process_time(), time.perf_counter()
    life_cpu_from = cpu
    latencies = in_parallel(
        home, args.clients, names, lambda c, n: c.apply(manifest(n, args.sleep), submit_dir=str(home))
    )
    submitted = time.perf_counter() - start
    cpu, clients_cpu = cpu_seconds(pid) - cpu, time.process_time() - clients_cpu

    def completed() -> bool:
        jobs = client.list_jobs("default")
        return sum(j["phase"] == "Completed" for j in jobs) == len(latencies)

    wait_for("every job completed", completed)
    all_done = time.perf_counter() - start
    life_cpu = cpu_seconds(pid) - life_cpu_from
    in_parallel(home, args.clients, names, lambda c, n: c.delete_job("default", n))
    pods = home / "pods" / "default"
    wait_for("every job gone", lambda: not client.list_jobs("default") and not any(pods.glob("*")))
    return {
        "accepted": len(latencies),
        "rate": len(latencies) / submitted,
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
        "max": max(latencies),
        "completed": all_done,
        "cpu": cpu / max(1, len(latencies)),
        "clients_cpu": clients_cpu / max(1, len(latencies)),
        "life_cpu": life_cpu / max(1, len(latencies)),
        "load": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds each pod runs (default: `true`)")
    parser.add_argument("--home", type=Path, help="CALDERA_HOME to use (default: a temporary one)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="caldera-bench-") as tmp:
        home = args.home or Path(tmp) / "home"
        print(caldera(home, "up", "--nodes", str(args.nodes)), flush=True)
        try:
            daemon = read_daemon(home)
            assert daemon is not None
            with connect(home) as client:
                rounds, memory = [], [rss_mib(daemon.pid)]
                for r in range(args.rounds):
                    got = one_round(home, client, args, r, daemon.pid)
                    rounds.append(got)
                    memory.append(rss_mib(daemon.pid))
                    print(
                        f"  round {r + 1}: {got['accepted']:.0f}/{args.jobs} accepted, {got['rate']:.0f} submissions/s, "
                        f"latency p50 {got['p50'] * 1000:.0f} ms p99 {got['p99'] * 1000:.0f} ms "
                        f"max {got['max'] * 1000:.0f} ms, all completed {got['completed']:.1f} s, "
                        f"daemon CPU {got['cpu'] * 1000:.1f} ms per submission (clients {got['clients_cpu'] * 1000:.1f} ms), "
                        f"{got['life_cpu'] * 1000:.1f} ms per job until all completed; "
                        f"RSS after deleting them {memory[-1]:.0f} MiB; load {got['load']:.1f}",
                        flush=True,
                    )
            med = {k: statistics.median(g[k] for g in rounds) for k in rounds[0]}
            print(
                f"{args.jobs} single-pod jobs, {args.clients} clients, {args.nodes} nodes, median of {args.rounds} rounds: "
                f"{med['rate']:.0f} submissions/s, p99 submit latency {med['p99'] * 1000:.0f} ms, "
                f"all completed in {med['completed']:.1f} s, daemon CPU {med['cpu'] * 1000:.1f} ms per submission "
                f"(clients {med['clients_cpu'] * 1000:.1f} ms), {med['life_cpu'] * 1000:.1f} ms per job until all completed; daemon RSS {memory[0]:.0f} MiB before, "
                f"{', '.join(f'{m:.0f}' for m in memory[1:])} MiB after each round's deletion; "
                f"load average {min(g['load'] for g in rounds):.1f}-{max(g['load'] for g in rounds):.1f}"
            )
        finally:
            print(caldera(home, "down"))


if __name__ == "__main__":
    main()
