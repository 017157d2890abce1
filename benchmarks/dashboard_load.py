"""The dashboard's first page ready with 1,000 jobs and 10,000 pods, measured in the browser.

An embedded cluster is built in this process (its control plane, scheduler, SQLite store,
change feed and REST server are the daemon's own) with 125 virtual nodes of 8 GPUs, and
1,000 jobs of 10 pods each are submitted through its API (a master with a GPU and nine
workers); 200 of them then finish, so the store has a history. The one part that is not
real: pods run no process (this machine cannot host 10,000), an executor that starts
nothing stands in for the local one, and reports a pod stopped when asked to stop it.

The server is the daemon's app (`caldera.server.create_app`) under uvicorn on loopback.
Debian's Chromium (headless, through Playwright) logs in once, then opens each page
`--repeat` more times; the figure is the page's own `caldera:ready` mark (its first data on
screen), in ms from the start of the navigation: the first visit with an empty cache
(cold), the median and the best of the others (the page's files cached). With them, per warm
visit (median), the CPU the browser's renderer spent (Chrome's ProcessTime metric) and the CPU
the server's threads spent (all of this process's but the main one, Playwright's): what it costs, which the machine's load does
not change, where the time to ready on a shared machine is mostly waiting for a core. The API
views the pages read are timed too, fetched from the page (median of `--repeat`). The load
average is printed with the figures.

    python benchmarks/dashboard_load.py [--jobs 1000] [--pods 10] [--nodes 125] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from caldera.backends.process import ProcessEvent
from caldera.core import objects as o
from caldera.server import create_app
from caldera.system.daemon import EmbeddedCluster

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]  # fmt: skip
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


VIEWS = [
    "/api/v1/overview",
    "/api/v1/jobtable",
    "/api/v1/allocations?podsUpTo=12",  # what the nodes page reads
    "/api/v1/allocations",  # every pod of every node
    "/api/v1/timeline?since={day_ago}",
    "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs/{job}/describe",
    "/api/v1/watch?kind=Job&allowWatchBookmarks=true&timeoutSeconds=0",  # what `list -w` reads first
]
FETCH = """async (path) => {
  const csrf = document.querySelector('meta[name="caldera-csrf"]').content;
  const t0 = performance.now();
  const r = await fetch(path, { headers: { "X-Caldera-CSRF": csrf } });
  const body = await r.text();
  return [performance.now() - t0, body.length, r.status];
}"""


@dataclass(frozen=True, slots=True)
class PageTimes:
    """One page's figures: ms to ready (first visit, median and best of the others) and, per warm visit
    (median), the CPU ms the browser's renderer and the server's threads (see `others_cpu`) spent."""

    cold: float
    warm: float
    best: float
    browser_cpu: float
    server_cpu: float


def browser_times(
    url: str, pages: list[str], job: str, repeat: int
) -> tuple[dict[str, PageTimes], dict[str, tuple[float, int]]]:
    """Per page: its `PageTimes`; per API view the pages read: the median ms of a fetch from the page, and its bytes."""
    from playwright.sync_api import sync_playwright

    pages_out, views_out = {}, {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        for path in pages:
            context = browser.new_context(viewport={"width": 1360, "height": 900})  # an empty cache
            page = context.new_page()
            cdp = context.new_cdp_session(page)
            cdp.send("Performance.enable")
            page.goto(f"{url}/login?next={path}")
            page.fill("#token", TOKEN)
            with page.expect_navigation(url=f"{url}{path}"):  # the login's redirect: the page's first load
                page.click("button[type=submit]")
            cold = ready_ms(page)
            readies, browser_cpu, server_cpu = [], [], []
            for _ in range(repeat):
                renderer, server = renderer_cpu(cdp), others_cpu()
                page.goto(f"{url}{path}")
                readies.append(ready_ms(page))
                server_cpu.append(others_cpu() - server)
                browser_cpu.append(max(0.0, renderer_cpu(cdp) - renderer))  # a new renderer process starts at 0
            pages_out[path] = PageTimes(
                cold,
                statistics.median(readies),
                min(readies),
                statistics.median(browser_cpu),
                statistics.median(server_cpu),
            )
            if path == "/":
                for view in VIEWS:
                    target = view.format(day_ago=time.time() - 86400, job=job)
                    runs = [page.evaluate(FETCH, target) for _ in range(repeat)]
                    assert all(status == 200 for _, _, status in runs), (view, runs)
                    name = view.replace("?since={day_ago}", "?since=-24h").split("&")[0]
                    name = name.replace("/apis/batch.volcano.sh/v1alpha1/namespaces/default", "...")
                    views_out[name.format(job=job)] = (statistics.median(r[0] for r in runs), runs[0][1])
            context.close()
        browser.close()
    return pages_out, views_out


def others_cpu() -> float:
    """CPU ms of this process's threads but the main one (Playwright's client runs there): the server's."""
    return (time.process_time() - time.thread_time()) * 1000


def renderer_cpu(cdp: Any) -> float:
    """CPU ms the page's renderer process has used (Chrome's `ProcessTime` metric), whatever the load."""
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return float(metrics.get("ProcessTime", 0.0)) * 1000


def ready_ms(page: Any) -> float:
    page.wait_for_selector("html[data-ready=true]", timeout=120_000)
    return float(page.evaluate("performance.getEntriesByName('caldera:ready')[0].startTime"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=10, help="pods per job")
    ap.add_argument("--nodes", type=int, default=125)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        sys.exit(f"{CHROMIUM} is missing: install Debian's chromium (make does, as root)")
    with tempfile.TemporaryDirectory(prefix="caldera-dash-bench-") as tmp:
        started = time.perf_counter()
        cluster, _ = build(Path(tmp) / "home", args.jobs, args.pods, args.nodes)
        view = cluster.overview()
        print(
            f"built in {time.perf_counter() - started:.0f} s: {sum(view['jobs'].values()):,} jobs "
            f"({', '.join(f'{n} {p}' for p, n in view['jobs'].items())}), {sum(view['pods'].values()):,} pods, "
            f"{view['nodes']['total']} nodes",
            flush=True,
        )
        url, server, thread = serve(cluster)
        job = f"train-{args.jobs // 2:04d}"  # a running one
        try:
            pages = ["/", "/jobs", f"/jobs/default/{job}", "/nodes", "/timeline"]
            load = os.getloadavg()[0]
            page_times, view_times = browser_times(url, pages, job, args.repeat)
            print(f"\n{'API view (fetched by the page)':62} {'median ms':>10} {'bytes':>12}")
            for name, (ms, size) in view_times.items():
                print(f"{name:62} {ms:10.1f} {size:12,}")
            print(
                f"\n{'page ready (in Chromium)':32} {'cold ms':>8} {'warm ms':>8} {'best ms':>8}"
                f" {'browser CPU':>12} {'server CPU':>11}   (goal: first page <= 300 ms)"
            )
            for path, t in page_times.items():
                print(
                    f"{path:32} {t.cold:8.0f} {t.warm:8.0f} {t.best:8.0f} {t.browser_cpu:9.0f} ms {t.server_cpu:8.0f} ms"
                )
            print(f"\nload average (1 min) at the start of the browser runs: {load:.1f} on {os.cpu_count()} cores")
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            cluster.shutdown(stop_pods=True)


if __name__ == "__main__":
    main()
