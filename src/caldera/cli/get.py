"""`caldera get JOB`: a job's summary and its pods in rank order (rank 0 is the master)."""

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


def pods_table(summary: JSON, tasks: list[str] | None = None) -> Table:
    t = table("RANK", "INSTANCE", "TASK", "PHASE", "NODE", "ADDRESS", "EXIT", "RESTARTS", title="Instances")
    for rank, p in enumerate(ordered_pods(summary, tasks)):
        t.add_row(
            str(rank),
            str(p.get("name")),
            text(p.get("task")),
            text(p.get("phase")),
            text(p.get("node")),
            text(p.get("address")),
            text(p.get("exitCode")),
            text(p.get("restarts")),
        )
    return t
