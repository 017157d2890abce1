"""Tables for people (rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def _t(v: object) -> str:
    return "-" if v is None else (f"{v:g}" if isinstance(v, float) else str(v))


def print_timeline(report: dict[str, Any], console: Console | None = None) -> None:
    """Jobs, pods and events, then the summary line (the demo's view; `simulate --pods`)."""
    console = console or Console()
    print_jobs(report, console)
    print_pods(report, console)
    s = report["summary"]
    console.print(
        f"jobs {s['jobs']}  avgJCT {_t(s['avgJCT'])}  p99JCT {_t(s['p99JCT'])}  "
        f"avgQueueDelay {_t(s['avgQueueDelay'])}  makespan {_t(s['makespan'])}  gpuUtilization {_t(s['gpuUtilization'])}"
    )


def print_jobs(report: dict[str, Any], console: Console | None = None) -> None:
    """One row per job, times in seconds of the virtual clock."""
    console = console or Console()
    jobs = Table(title="Jobs (times in seconds)", title_justify="left")
    for col in ("job", "queue", "submit", "start", "end", "phase", "retries"):
        jobs.add_column(col, justify="left" if col in ("job", "queue", "phase") else "right")
    for j in report["jobs"]:
        jobs.add_row(
            j["name"],
            j["queue"],
            _t(j["submitTime"]),
            _t(j["startTime"]),
            _t(j["endTime"]),
            j["phase"],
            _t(j["retryCount"]),
        )
    console.print(jobs)


def print_pods(report: dict[str, Any], console: Console | None = None) -> None:
    """Every pod attempt and every event (`simulate --pods`)."""
    console = console or Console()
    pods = Table(title="Pods (times in seconds)", title_justify="left")
    for col in ("pod", "attempt", "node", "start", "end", "phase", "exit"):
        pods.add_column(col)
    for p in report["pods"]:
        pods.add_row(
            p["name"],
            _t(p["attempt"]),
            p["node"] or "-",
            _t(p["startTime"]),
            _t(p["endTime"]),
            p["phase"],
            _t(p["exitCode"]),
        )
    console.print(pods)
    events = Table(title="Events", title_justify="left")
    for col in ("time", "kind", "object", "node", "reason", "message"):
        events.add_column(col)
    for e in report["events"]:
        events.add_row(_t(e["time"]), e["kind"], e["object"], e["node"], e["reason"], e["message"])
    console.print(events)


def print_comparison(
    headers: list[str], rows: list[list[str]], *, title: str = "", console: Console | None = None
) -> None:
    """One row per policy (`caldera simulate compare`)."""
    if console is None:
        console = Console()
        if not console.is_terminal:  # a file or a pipe: the whole table, not one folded to 80 columns
            console = Console(width=240)
    table = Table(title=title or None, title_justify="left")
    for i, h in enumerate(headers):
        # Names and numbers never wrap: a number split over two lines reads as two numbers.
        table.add_column(h, justify="left" if i == 0 else "right", no_wrap=i == 0, overflow="fold")
    for row in rows:
        table.add_row(*row)
    console.print(table)
