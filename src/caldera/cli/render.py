"""Tables for people (rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def _t(v: object) -> str:
    return "-" if v is None else (f"{v:g}" if isinstance(v, float) else str(v))


def print_timeline(report: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    jobs = Table(title="Jobs", title_justify="left")
    for col in ("job", "queue", "submit", "start", "end", "phase", "retries"):
        jobs.add_column(col)
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
    pods = Table(title="Pods", title_justify="left")
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
    s = report["summary"]
    console.print(
        f"jobs {s['jobs']}  avgJCT {_t(s['avgJCT'])}  p99JCT {_t(s['p99JCT'])}  "
        f"avgQueueDelay {_t(s['avgQueueDelay'])}  makespan {_t(s['makespan'])}  gpuUtilization {_t(s['gpuUtilization'])}"
    )
