"""`caldera list`: the jobs of a namespace (or of all), as a table or as stable JSON/YAML; `-w` follows changes.

REASON says why a job is held up, as kubectl's STATUS does for a pod: NeverFits (never, as
the nodes and its queue are), Unschedulable (not now), CrashLoopBackOff; `get` and
`describe` give the message, `explain` the details.
"""

from __future__ import annotations

import click

from caldera.cli.common import (
    Verb,
    age,
    clock,
    cluster,
    console,
    emit,
    job_duration,
    namespace_option,
    output_option,
    pods_running,
    table,
    text,
)
from caldera.cli.get import waiting_reason
from caldera.cli.watching import watch_jobs


@click.command("list", cls=Verb)
@namespace_option
@click.option("-A", "--all-namespaces", is_flag=True, help="jobs of every namespace")
@output_option
@click.option("-w", "--watch", is_flag=True, help="then print a row each time a job changes (until Ctrl-C)")
@click.pass_context
def list_jobs(ctx: click.Context, namespace: str, all_namespaces: bool, output: str, watch: bool) -> None:
    """List jobs: phase, pods running, retries, age, duration and why a job waits."""
    if watch:
        watch_jobs(cluster(ctx), None if all_namespaces else namespace, output, clock(ctx).now)
        return
    jobs = cluster(ctx).list_jobs(None if all_namespaces else namespace)
    if output != "table":
        emit(jobs, output)
        return
    if not jobs:
        click.echo("No jobs found" + ("" if all_namespaces else f" in namespace {namespace}") + ".", err=True)
        return
    now = clock(ctx).now()
    columns = ("NAME", "QUEUE", "PHASE", "RUNNING", "RETRIES", "MIN", "AGE", "DURATION", "REASON")
    t = table(*(("NAMESPACE", *columns) if all_namespaces else columns))
    for j in jobs:
        row = [
            str(j["name"]),
            text(j.get("queue")),
            text(j.get("phase")),
            pods_running(j),
            text(j.get("retryCount")),
            text(j.get("minAvailable")),
            age(j.get("creationTimestamp"), now),
            job_duration(j, now),
            text(waiting_reason(j)),
        ]
        t.add_row(*([str(j["namespace"]), *row] if all_namespaces else row))
    console().print(t)
