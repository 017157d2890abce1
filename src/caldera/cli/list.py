"""`caldera list`: the jobs of a namespace (or of all), as a table or as stable JSON/YAML; `-w` follows changes.

The table has one row a job: NAME, TYPE (the job's `volcano.sh/job-type` label, as
vcctl's JobType column: what `caldera submit` or a Kubeflow manifest made it), QUEUE,
PHASE, RUNNING pods of all, RETRIES, MIN (the gang), AGE, DURATION and REASON; `-o wide` adds
the NODES its pods are on and the phase's MESSAGE. `-l` keeps the jobs whose labels
match, `-o name` prints `job.batch.volcano.sh/NAME` lines, `-o json|yaml` one `List`.
REASON says why a job is held up, as kubectl's STATUS does for a pod: NeverFits (never, as
the nodes and its queue are), Unschedulable (not now), CrashLoopBackOff; `get` and
`describe` give the message, `explain` the details.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from caldera.cli.common import (
    Verb,
    age,
    all_namespaces_option,
    clock,
    cluster,
    job_duration,
    namespace_option,
    no_headers_option,
    output_option,
    pods_running,
    select_jobs,
    selector_option,
    table,
    text,
    waiting_reason,
)
from caldera.cli.output import TextTable, as_list, emit, emit_names, job_resource_name, print_table
from caldera.cli.watching import watch_jobs
from caldera.core.selector import Selector
from caldera.system.api import JSON

COLUMNS = ("NAME", "TYPE", "QUEUE", "PHASE", "RUNNING", "RETRIES", "MIN", "AGE", "DURATION", "REASON")
WIDE_COLUMNS = ("NODES", "MESSAGE")


@click.command("list", cls=Verb)
@namespace_option
@all_namespaces_option
@selector_option
@output_option
@no_headers_option
@click.option("-w", "--watch", is_flag=True, help="then print a row each time a job changes (until Ctrl-C)")
@click.pass_context
def list_jobs(
    ctx: click.Context,
    namespace: str,
    all_namespaces: bool,
    selector: Selector | None,
    output: str,
    no_headers: bool,
    watch: bool,
) -> None:
    """List jobs: type, phase, pods running, retries, age, duration and why a job waits."""
    where = None if all_namespaces else namespace
    if watch:
        watch_jobs(cluster(ctx), where, output, clock(ctx).now, selector=selector, no_headers=no_headers)
        return
    jobs = select_jobs(cluster(ctx), where, selector)
    if not jobs and output in ("table", "wide"):
        click.echo("No jobs found" + ("" if all_namespaces else f" in namespace {namespace}") + ".", err=True)
        return
    print_jobs(jobs, output, clock(ctx).now(), all_namespaces=all_namespaces, no_headers=no_headers)


def print_jobs(jobs: Sequence[JSON], output: str, now: float, *, all_namespaces: bool, no_headers: bool) -> None:
    """Job summaries in any `-o` format (what `list` and `get -l` print)."""
    if output in ("json", "yaml"):
        emit(as_list(jobs), output)
    elif output == "name":
        emit_names(job_resource_name(j) for j in jobs)
    else:
        print_table(jobs_table(jobs, now, all_namespaces=all_namespaces, wide=output == "wide"), no_headers)


def jobs_table(jobs: Sequence[JSON], now: float, *, all_namespaces: bool, wide: bool = False) -> TextTable:
    columns = (*COLUMNS, *(WIDE_COLUMNS if wide else ()))
    t = table(*(("NAMESPACE", *columns) if all_namespaces else columns))
    for j in jobs:
        row = [
            str(j["name"]),
            text(j.get("type")),
            text(j.get("queue")),
            text(j.get("phase")),
            pods_running(j),
            text(j.get("retryCount")),
            text(j.get("minAvailable")),
            age(j.get("creationTimestamp"), now),
            job_duration(j, now),
            text(waiting_reason(j)),
        ]
        if wide:
            nodes = sorted({str(p["node"]) for p in j.get("pods") or [] if p.get("node")})
            row += [text(",".join(nodes)), text(j.get("message"))]
        t.add_row(*([str(j["namespace"]), *row] if all_namespaces else row))
    return t
