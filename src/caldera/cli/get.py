"""`caldera get JOB`: a job's summary and its pods in rank order (rank 0 is the master).

A job held up says why (`Waiting:`, the same reason as `list`'s REASON column): NeverFits
(it cannot run as the nodes and its queue are: see `caldera explain`), Unschedulable (not
now: capacity or its queue's capability is in use) or CrashLoopBackOff. A pod's PHASE is its
reason when it has one, as kubectl's STATUS: CrashLoopBackOff, or Stopped / Evicted for a pod
that ended and was removed (its exit code and log are kept until the job is deleted).
"""

from __future__ import annotations

import click
from rich.table import Table

from caldera.cli.common import (
    Verb,
    age,
    clock,
    cluster,
    console,
    emit,
    job_duration,
    namespace_option,
    ordered_pods,
    output_option,
    table,
    text,
)
from caldera.system.api import JSON


@click.command(cls=Verb)
@click.argument("job")
@namespace_option
@output_option
@click.pass_context
def get(ctx: click.Context, job: str, namespace: str, output: str) -> None:
    """Show JOB: phase, retries, and each pod (rank, task, phase, node, address, exit code)."""
    summary = cluster(ctx).get_job(namespace, job)
    if output != "table":
        emit(summary, output)
        return
    out = console()
    out.print(header(summary, clock(ctx).now()))
    out.print()
    out.print(pods_table(summary))


def header(summary: JSON, now: float) -> Table:
    """Name, namespace, queue, phase (with its reason), retries, minAvailable, age, duration."""
    t = Table.grid(padding=(0, 2))
    phase = text(summary.get("phase"))
    why = ": ".join(str(summary[k]) for k in ("reason", "message") if summary.get(k))
    rows = [
        ("Name", summary.get("name")),
        ("Namespace", summary.get("namespace")),
        ("Queue", summary.get("queue")),
        ("Phase", f"{phase} ({why})" if why else phase),
        *([("Waiting", waiting_line(summary))] if summary.get("waiting") else []),
        ("Retries", summary.get("retryCount")),
        ("MinAvailable", summary.get("minAvailable")),
        ("Age", age(summary.get("creationTimestamp"), now)),
        ("Duration", job_duration(summary, now)),
    ]
    if summary.get("tensorboard"):
        rows.append(("TensorBoard", summary["tensorboard"]))
    for key, value in rows:
        t.add_row(f"{key}:", text(value))
    return t


def waiting_reason(summary: JSON) -> str:
    """The REASON column: why the job is held up ("" if nothing holds it up)."""
    return str((summary.get("waiting") or {}).get("reason") or "")


def waiting_line(summary: JSON) -> str:
    w = summary.get("waiting") or {}
    when = "never, as the nodes and the queue are" if w.get("never") else "not now"
    return f"{w.get('reason')}: {w.get('message')} ({when}; caldera explain {summary.get('name')} says more)"


def pod_status(pod: JSON) -> str:
    """A pod's PHASE cell: its reason when it has one (CrashLoopBackOff, Stopped, Evicted), else its phase."""
    return str(pod.get("reason") or pod.get("phase") or "")


def pods_table(summary: JSON, tasks: list[str] | None = None) -> Table:
    t = table("RANK", "INSTANCE", "TASK", "PHASE", "NODE", "ADDRESS", "EXIT", "RESTARTS", title="Instances")
    for rank, p in enumerate(ordered_pods(summary, tasks)):
        t.add_row(
            str(rank),
            str(p.get("name")),
            text(p.get("task")),
            text(pod_status(p)),
            text(p.get("node")),
            text(p.get("address")),
            text(p.get("exitCode")),
            text(p.get("restarts")),
        )
    return t
