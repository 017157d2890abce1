"""The dashboard's first page ready with 1,000 jobs and 10,000 pods, measured in the browser.

The cluster (`benchmarks/dashboard_cluster.py`): 1,000 jobs of 10 pods each (a master with a
GPU and nine workers, 200 of them finished) on 125 virtual nodes of 8 GPUs, submitted through
the API of an embedded cluster whose control plane, scheduler, SQLite store, change feed and REST
server are the daemon's own; pods run no process. The server is the daemon's app
(`caldera.server.create_app`) under uvicorn on loopback, in a process of its own.
Debian's Chromium (headless, through Playwright) logs in once per server and keeps the session
cookie; the figure is the page's own `caldera:ready` mark (its first data on screen), in ms from
the start of the navigation to the page: the median of `--repeat` first visits, each in a new
browser context with an empty cache and the session cookie, the page's URL typed (cold); the
median of `--repeat` first visits through the login form instead (a new context, the login page,
the token, and the form's redirect to the page: that navigation starts at the form's POST, so
the login's round trip is counted in; after login); and the median and the best of `--repeat`
visits after a cold one (the page's files cached). With them, per warm
visit (median), the CPU the browser's renderer spent (Chrome's ProcessTime metric) and the CPU
the server's process spent: what it costs, which the machine's load does not change, where the
time to ready on a shared machine is mostly waiting for a core. The API views the pages read
are timed too, fetched from the page (median of `--repeat`). The load average is printed
with the figures.

`--baseline REV` measures the dashboard of a git revision (`main`, a commit) in the same run:
its `src/` (from `git archive`) serves a second cluster built the same way, and each page is
opened on both servers in turn (cold, then warm visits alternating, the order swapped every
round), so the ratio of the two holds whatever the load was.

    python benchmarks/dashboard_load.py [--jobs 1000] [--pods 10] [--nodes 125] [--repeat 5] [--baseline REV]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dashboard_cluster import TOKEN, Server, await_url, checkout, start_server

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]  # fmt: skip
VIEWS = [
    "/api/v1/overview",
    "/api/v1/jobtable",
    "/api/v1/allocations?podsUpTo=12",  # what the nodes page reads
    "/api/v1/allocations",  # every pod of every node
    "/api/v1/timeline?since={day_ago}",
    "/api/v1/timeline?since={day_ago}&format=columns",  # what the timeline page reads (a baseline without it: items)
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
    """One page's figures on one server: ms to ready (median of the first visits, median and best of the warm ones) and, per
    warm visit (median), the CPU ms the browser's renderer and the server's process spent."""

    cold: float
    after_login: float
    warm: float
    best: float
    browser_cpu: float
    server_cpu: float


@dataclass(slots=True)
class Visit:
    """One server's page open in its own browser context (an empty cache at first, then warm)."""

    server: Server
    page: Any
    cdp: Any
    cold: float
    readies: list[float]
    browser_cpu: list[float]
    server_cpu: list[float]


VIEWPORT = {"width": 1360, "height": 900}


def session_state(browser: Any, server: Server) -> Any:
    """The browser's storage after one login on `server` (its session cookie), for new contexts to start from."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        login_visit(context.new_page(), server, "/")
        return context.storage_state()
    finally:
        context.close()


def login_visit(page: Any, server: Server, path: str) -> float:
    """Through the login form to `path`; the page's ready mark (from the form's POST, which redirects to it)."""
    page.goto(f"{server.url}/login?next={path}")
    page.fill("#token", TOKEN)
    with page.expect_navigation(url=f"{server.url}{path}"):  # the login's redirect: the page's first load
        page.click("button[type=submit]")
    return ready_ms(page)


def open_page(browser: Any, server: Server, path: str, state: Any) -> Visit:
    """`path` typed in a new context: an empty cache, the session cookie of `state`."""
    context = browser.new_context(viewport=VIEWPORT, storage_state=state)
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")
    page.goto(f"{server.url}{path}")
    return Visit(server, page, cdp, ready_ms(page), [], [], [])


def first_after_login(browser: Any, server: Server, path: str) -> float:
    context = browser.new_context(viewport=VIEWPORT)  # an empty cache, no cookie
    try:
        return login_visit(context.new_page(), server, path)
    finally:
        context.close()


def revisit(v: Visit, path: str) -> None:
    renderer, server = renderer_cpu(v.cdp), v.server.cpu_ms()
    v.page.goto(f"{v.server.url}{path}")
    v.readies.append(ready_ms(v.page))
    v.server_cpu.append(v.server.cpu_ms() - server)
    v.browser_cpu.append(max(0.0, renderer_cpu(v.cdp) - renderer))  # a new renderer process starts at 0


def browser_times(
    servers: list[Server], pages: list[str], job: str, repeat: int
) -> tuple[dict[tuple[str, str], PageTimes], dict[tuple[str, str], tuple[float, int]]]:
    """Per (server, page): its `PageTimes`; per (server, API view the pages read): the median ms of a fetch
    from the page, and its bytes. Each page is opened on every server in turn."""
    from playwright.sync_api import sync_playwright

    pages_out, views_out = {}, {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        states = {s.label: session_state(browser, s) for s in servers}
        for path in pages:
            colds: dict[str, list[float]] = {s.label: [] for s in servers}
            logins: dict[str, list[float]] = {s.label: [] for s in servers}
            for round_ in range(repeat):  # first visits in a new context each, all but the last typed one closed
                for s in servers if round_ % 2 == 0 else servers[::-1]:
                    logins[s.label].append(first_after_login(browser, s, path))
                    if round_ < repeat - 1:
                        first = open_page(browser, s, path, states[s.label])
                        colds[s.label].append(first.cold)
                        first.page.context.close()
            visits = [open_page(browser, s, path, states[s.label]) for s in servers]
            for round_ in range(repeat):
                for v in visits if round_ % 2 == 0 else visits[::-1]:
                    revisit(v, path)
            for v in visits:
                pages_out[v.server.label, path] = PageTimes(
                    statistics.median([*colds[v.server.label], v.cold]),
                    statistics.median(logins[v.server.label]),
                    statistics.median(v.readies),
                    min(v.readies),
                    statistics.median(v.browser_cpu),
                    statistics.median(v.server_cpu),
                )
                if path == "/":
                    views_out.update({(v.server.label, k): t for k, t in view_times(v.page, job, repeat).items()})
                v.page.context.close()
        browser.close()
    return pages_out, views_out


def view_times(page: Any, job: str, repeat: int) -> dict[str, tuple[float, int]]:
    out = {}
    for view in VIEWS:
        target = view.format(day_ago=time.time() - 86400, job=job)
        runs = [page.evaluate(FETCH, target) for _ in range(repeat)]
        name = view.replace("?since={day_ago}", "?since=-24h").split("&allow")[0]
        name = name.replace("/apis/batch.volcano.sh/v1alpha1/namespaces/default", "...").format(job=job)
        if all(status == 200 for _, _, status in runs):
            out[name] = (statistics.median(r[0] for r in runs), runs[0][1])
    return out


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
    ap.add_argument("--baseline", metavar="REV", help="also measure this git revision's dashboard, page by page")
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        sys.exit(f"{CHROMIUM} is missing: install Debian's chromium (make does, as root)")
    with tempfile.TemporaryDirectory(prefix="caldera-dash-base-") as tmp:
        here = Path(__file__).resolve().parent.parent / "src"
        servers = [start_server("this", here, args)]
        if args.baseline:
            servers.append(start_server(args.baseline, checkout(args.baseline, Path(tmp)), args))
        try:
            for s in servers:
                await_url(s)
            job = f"train-{args.jobs // 2:04d}"  # a running one
            pages = ["/", "/jobs", f"/jobs/default/{job}", "/nodes", "/timeline"]
            load = os.getloadavg()[0]
            page_times, view_times_ = browser_times(servers, pages, job, args.repeat)
            report(servers, pages, page_times, view_times_)
            print(f"\nload average (1 min) at the start of the browser runs: {load:.1f}, at the end: "
                  f"{os.getloadavg()[0]:.1f}, on {os.cpu_count()} cores")  # fmt: skip
        finally:
            for s in servers:
                if s.process.stdin is not None:
                    s.process.stdin.close()
            for s in servers:
                s.process.wait(timeout=120)


def report(
    servers: list[Server],
    pages: list[str],
    page_times: dict[tuple[str, str], PageTimes],
    view_times_: dict[tuple[str, str], tuple[float, int]],
) -> None:
    print(f"\n{'API view (fetched by the page)':56} {'server':>8} {'median ms':>10} {'bytes':>12}")
    for (label, name), (ms, size) in sorted(view_times_.items(), key=lambda kv: (kv[0][1], kv[0][0] != "this")):
        print(f"{name:56} {label:>8} {ms:10.1f} {size:12,}")
    print(
        f"\n{'page ready (in Chromium)':30} {'server':>8} {'cold ms':>8} {'login ms':>8} {'warm ms':>8} {'best ms':>8}"
        f" {'browser CPU':>12} {'server CPU':>11}   (goal: first page <= 300 ms)"
    )
    for path in pages:
        for s in servers:
            t = page_times[s.label, path]
            print(
                f"{path:30} {s.label:>8} {t.cold:8.0f} {t.after_login:8.0f} {t.warm:8.0f} {t.best:8.0f}"
                f" {t.browser_cpu:9.0f} ms {t.server_cpu:8.0f} ms"
            )
        if len(servers) == 2:
            a, b = page_times[servers[0].label, path], page_times[servers[1].label, path]
            print(
                f"{'':30} {'ratio':>8} {a.cold / b.cold:8.2f} {a.after_login / b.after_login:8.2f}"
                f" {a.warm / b.warm:8.2f} {a.best / b.best:8.2f}"
                f" {a.browser_cpu / max(b.browser_cpu, 1):12.2f} {a.server_cpu / max(b.server_cpu, 1):11.2f}"
            )


if __name__ == "__main__":
    main()
