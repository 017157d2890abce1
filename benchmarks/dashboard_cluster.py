"""The dashboard benchmark's cluster: 1,000 jobs of 10 pods on 125 virtual nodes, served by the daemon's app.

An embedded cluster is built in this process (its control plane, scheduler, SQLite store, change
feed and REST server are the daemon's own) and the jobs are submitted through its API (a master
with a GPU and nine workers); 200 of them then finish, so the store has a history. The one part
that is not real: pods run no process (this machine cannot host 10,000), an executor that starts
nothing stands in for the local one, and reports a pod stopped when asked to stop it.

`benchmarks/dashboard_load.py` starts this script as a child (`start_server`), one per server
measured (its own `src/`, or a git revision's for `--baseline`), reads its URL from the first
line it prints (`await_url`) and stops it by closing its stdin.

    python benchmarks/dashboard_cluster.py [--jobs 1000] [--pods 10] [--nodes 125]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

import uvicorn

from caldera.backends.process import ProcessEvent
from caldera.core import objects as o
from caldera.server import create_app
from caldera.system.daemon import EmbeddedCluster


@dataclass(slots=True)
class Server:
    """A served cluster in a child process (this script): its label, URL and process."""

    label: str
    url: str
    process: subprocess.Popen[str]

    def cpu_ms(self) -> float:
        """CPU ms the server's process has used (user and system, all its threads)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


TOKEN = "benchmark-token"


QUEUES = {"default": 1, "research": 2, "prod": 4}


class NoProcesses:
    """The control plane's executor, without processes: a pod runs until it is stopped (or told to end)."""

    def __init__(self, cluster: EmbeddedCluster, report: Callable[[ProcessEvent], None]) -> None:
        self.cluster = cluster
        self.report = report  # what the local executor reports to: the daemon's control loop

    def start(self, pod: o.Pod, node: o.Node) -> None:
        self.cluster.runtime.gpus.assign(pod.key, node.name, int(pod.spec.requests().get("nvidia.com/gpu", 0) / 1000))

    def stop(self, pod: o.Pod) -> None:
        self.report(ProcessEvent(pod.key, "stopped", 143, 0, time.time()))

    def exit(self, key: str, code: int) -> None:
        self.report(ProcessEvent(key, "exited", code, 0, time.time()))


def manifest(i: int, pods: int) -> dict[str, Any]:
    def task(name: str, replicas: int, gpus: int) -> dict[str, Any]:
        requests = {"cpu": "500m", "memory": "1Gi", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
        container = {
            "name": "main",
            "command": ["python", "train.py", "--epochs", "90"],
            "resources": {"requests": requests},
        }
        return {
            "name": name,
            "replicas": replicas,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        }

    queue = list(QUEUES)[i % len(QUEUES)]
    spec = {"minAvailable": pods, "queue": queue, "tasks": [task("master", 1, 1), task("worker", pods - 1, 0)]}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": f"train-{i:04d}"},
        "spec": spec,
    }


def build(home: Path, jobs: int, pods: int, nodes: int) -> tuple[EmbeddedCluster, NoProcesses]:
    cluster = EmbeddedCluster(home, nodes=nodes, cpus_per_node="64", memory_per_node="256Gi", gpus_per_node=8)
    executor = NoProcesses(cluster, cluster._on_process)
    cluster.plane.executor = executor
    cluster.start()
    for name, weight in QUEUES.items():
        cluster.apply(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"weight": weight},
            }
        )
    with ThreadPoolExecutor(64) as pool:  # concurrent submissions: the control loop takes them in batches
        list(pool.map(lambda i: cluster.apply(manifest(i, pods), "/tmp"), range(jobs)))
    wait(lambda: cluster.overview()["pods"].get("Running", 0) == jobs * pods, "every pod running")
    finished = jobs // 5
    ending = [
        f"default/{p['name']}" for i in range(finished) for p in cluster.get_job("default", f"train-{i:04d}")["pods"]
    ]
    for key in ending:  # all at once: the control loop takes them in batches
        executor.exit(key, 0)
    wait(lambda: cluster.overview()["jobs"].get("Completed", 0) == finished, f"{finished} jobs completed")
    return cluster, executor


def wait(predicate: Callable[[], bool], what: str, timeout: float = 1800.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.5)


def serve(cluster: EmbeddedCluster) -> tuple[str, uvicorn.Server, threading.Thread]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(
        uvicorn.Config(create_app(cluster, TOKEN), log_config=None, access_log=False, lifespan="off")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, thread


def serve_forever(args: argparse.Namespace) -> None:
    """Build the cluster, serve it, print its URL, and stop when the parent closes stdin."""
    with tempfile.TemporaryDirectory(prefix="caldera-dash-bench-") as tmp:
        started = time.perf_counter()
        cluster, _ = build(Path(tmp) / "home", args.jobs, args.pods, args.nodes)
        view = cluster.overview()
        built = (
            f"built in {time.perf_counter() - started:.0f} s: {sum(view['jobs'].values()):,} jobs "
            f"({', '.join(f'{n} {p}' for p, n in view['jobs'].items())}), {sum(view['pods'].values()):,} pods, "
            f"{view['nodes']['total']} nodes"
        )
        url, server, thread = serve(cluster)
        print(f"URL {url} {built}", flush=True)
        try:
            sys.stdin.read()  # until the parent is done
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            cluster.shutdown(stop_pods=True)


def start_server(label: str, src: Path, args: argparse.Namespace) -> Server:
    command = [sys.executable, __file__, "--jobs", str(args.jobs), "--pods", str(args.pods)]
    command += ["--nodes", str(args.nodes)]
    env = {**os.environ, "PYTHONPATH": str(src)}
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    return Server(label, "", process)


def await_url(server: Server) -> None:
    assert server.process.stdout is not None
    line = server.process.stdout.readline()
    if not line.startswith("URL "):
        raise SystemExit(f"the {server.label} server did not start (exit {server.process.wait()})")
    _, server.url, built = line.strip().split(" ", 2)
    print(f"{server.label}: {built}", flush=True)


def checkout(rev: str, into: Path) -> Path:
    """The `src/` of git revision `rev`, written under `into`."""
    root = Path(__file__).resolve().parent.parent
    archive = subprocess.run(["git", "-C", str(root), "archive", rev, "src"], capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"--baseline {rev}: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=10, help="pods per job")
    ap.add_argument("--nodes", type=int, default=125)
    serve_forever(ap.parse_args())


if __name__ == "__main__":
    main()
