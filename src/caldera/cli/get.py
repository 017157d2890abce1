"""`caldera get JOB...`: a job's summary and its pods in rank order (rank 0 is the master); or a table of jobs.

Arguments name jobs as kubectl names objects: `NAME`, `KIND/NAME` or a kind followed by
names (`tfjob/mnist`, `tfjob mnist`), the kind being `job` (any job) or a job type
(`tfjob`, `pytorchjob`, `mpijob`, `paddlejob`, plural or not): a job of another type is
then "not found". A kind alone, `-l SELECTOR` or `-A` selects jobs and prints them as
`list` does (one row each). One named job prints its header and pods; `-o json|yaml`
gives its summary (several: one `List`), `-o name` its `KIND.GROUP/NAME`.

`-w` keeps printing: for one job, a row for each change of one of its pods (as
`kubectl get pods -l volcano.sh/job-name=JOB -w`); for a selection, `list -w`'s rows.

A job held up says why (`Waiting:`, the same reason as `list`'s REASON column): NeverFits
(it cannot run as the nodes and its queue are: see `caldera explain`), Unschedulable (not
now: capacity or its queue's capability is in use) or CrashLoopBackOff. A pod's PHASE is its
reason when it has one, as kubectl's STATUS: CrashLoopBackOff, or Stopped / Evicted for a pod
that ended and was removed (its exit code and log are kept until the job is deleted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import click

from caldera.cli.common import (
    Cluster,
    Verb,
    age,
    all_namespaces_option,
    clock,
    cluster,
    complete_jobs,
    fail,
    job_duration,
    namespace_option,
    no_headers_option,
    ordered_pods,
    output_option,
    select_jobs,
    selector_option,
    table,
    text,
)
from caldera.cli.list import print_jobs
from caldera.cli.output import TextTable, as_list, emit, emit_names, format_row, job_resource_name, print_table
from caldera.cli.watching import watch_jobs
from caldera.client.http import initial_events_end
from caldera.core.objects import JOB_NAME_KEY, TASK_SPEC_KEY
from caldera.core.selector import Selector
from caldera.system.api import JSON, NotFound

# A kind word → the job type it selects ("" any job).
KINDS = {
    "job": "",
    "vcjob": "",
    "tfjob": "TFJob",
    "pytorchjob": "PyTorchJob",
    "mpijob": "MPIJob",
    "paddlejob": "PaddleJob",
}
POD_COLUMNS = ("INSTANCE", "TASK", "PHASE", "NODE", "EXIT", "RESTARTS", "AGE")


@click.command(cls=Verb)
@click.argument("jobs", nargs=-1, metavar="[KIND] [JOB]...", shell_complete=complete_jobs)
@namespace_option
@all_namespaces_option
@selector_option
@output_option
@no_headers_option
@click.option("-w", "--watch", is_flag=True, help="then print a row at each change (until Ctrl-C)")
@click.pass_context
def get(
    ctx: click.Context,
    jobs: tuple[str, ...],
    namespace: str,
    all_namespaces: bool,
    selector: Selector | None,
    output: str,
    no_headers: bool,
    watch: bool,
) -> None:
    """Show JOB: phase, retries, and each pod (rank, task, phase, node, address, exit code).

    With a kind alone, -l SELECTOR or -A: the jobs that match, one row each."""
    kind, names = _kind_and_names(ctx, jobs)
    c, now = cluster(ctx), clock(ctx).now
    if not names:
        if kind is None and selector is None and not all_namespaces:
            raise click.UsageError("name a JOB, or select jobs with a kind, -l SELECTOR or -A", ctx)
        where = None if all_namespaces else namespace
        if watch:
            watch_jobs(c, where, output, now, selector=selector, no_headers=no_headers)
            return
        found = [j for j in select_jobs(c, where, selector) if _of_kind(j, kind)]
        print_jobs(found, output, now(), all_namespaces=all_namespaces, no_headers=no_headers)
        return
    if all_namespaces:
        raise click.UsageError("a job is named in one namespace: -A goes with a kind or -l, not with names", ctx)
    summaries = [_get(c, namespace, name, kind) for name in names]
    if selector is not None:
        summaries = [s for s in summaries if selector.matches(s.get("labels"))]
    if watch:
        if len(summaries) != 1:
            fail(ctx, "-w follows one job")
        watch_pods(c, namespace, summaries[0], now, no_headers=no_headers)
        return
    if output in ("json", "yaml"):
        emit(summaries[0] if len(names) == 1 and summaries else as_list(summaries), output)
    elif output == "name":
        emit_names(job_resource_name(s) for s in summaries)
    else:
        for i, summary in enumerate(summaries):
            if i:
                click.echo()
            show(summary, now(), no_headers=no_headers)


def show(summary: JSON, now: float, *, no_headers: bool = False, tasks: list[str] | None = None) -> None:
    """A job as `get` prints it: the header, then its pods."""
    for line in header_lines(summary, now):
        click.echo(line)
    click.echo()
    print_table(pods_table(summary, tasks), no_headers)


def _kind_and_names(ctx: click.Context, args: tuple[str, ...]) -> tuple[str | None, list[str]]:
    """The job type a kind word selects (None: no kind given) and the job names, from `[KIND] NAME...` or `KIND/NAME`."""
    kind: str | None = None
    names: list[str] = []
    for i, arg in enumerate(args):
        word, slash, name = arg.partition("/")
        if slash:
            kind = _kind(ctx, word, kind)
            names.append(name)
        elif i == 0 and word.lower().removesuffix("s") in KINDS:
            kind = _kind(ctx, word, kind)
        else:
            names.append(arg)
    return kind, names


def _kind(ctx: click.Context, word: str, before: str | None) -> str:
    kind = KINDS.get(word.lower().removesuffix("s").partition(".")[0])
    if kind is None:
        raise click.UsageError(f"{word!r} is not a kind of job ({', '.join(KINDS)})", ctx)
    if before is not None and before != kind:
        raise click.UsageError("one kind at a time", ctx)
    return kind


def _of_kind(summary: JSON, kind: str | None) -> bool:
    return not kind or str(summary.get("type") or "").lower() == kind.lower()


def _get(c: Cluster, namespace: str, name: str, kind: str | None) -> JSON:
    summary = c.get_job(namespace, name)
    if not _of_kind(summary, kind):
        raise NotFound(f"{kind} {namespace}/{name} not found (job {name} is a {summary.get('type') or 'Volcano Job'})")
    return summary


def header_lines(summary: JSON, now: float) -> list[str]:
    """Name, namespace, kind, type, queue, phase (with its reason), retries, minAvailable, age, duration."""
    phase = text(summary.get("phase"))
    why = ": ".join(str(summary[k]) for k in ("reason", "message") if summary.get(k))
    kind = f"{summary.get('kind') or 'Job'} ({summary.get('apiVersion')})" if summary.get("apiVersion") else None
    rows = [
        ("Name", summary.get("name")),
        ("Namespace", summary.get("namespace")),
        ("Kind", kind),
        ("Type", summary.get("type")),
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
    width = max(len(key) for key, _ in rows) + 3
    return [f"{key}:".ljust(width) + text(value) for key, value in rows if key != "Kind" or value]


def waiting_line(summary: JSON) -> str:
    w = summary.get("waiting") or {}
    when = "never, as the nodes and the queue are" if w.get("never") else "not now"
    return f"{w.get('reason')}: {w.get('message')} ({when}; caldera explain {summary.get('name')} says more)"


def pod_status(pod: JSON) -> str:
    """A pod's PHASE cell: its reason when it has one (CrashLoopBackOff, Stopped, Evicted), else its phase."""
    return str(pod.get("reason") or pod.get("phase") or "")


def pods_table(summary: JSON, tasks: list[str] | None = None) -> TextTable:
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


# ---------------------------------------------------------------- get JOB -w


def watch_pods(c: Cluster, namespace: str, summary: JSON, now: Callable[[], float], *, no_headers: bool) -> None:
    """The job's pods, then a row each time one of them changes (phase, node, exit code, restarts)."""
    job = str(summary["name"])
    events = (
        e for e in c.watch(("Pod",), namespace) if e.get("type") == "BOOKMARK" or _labels(e).get(JOB_NAME_KEY) == job
    )
    _pod_rows(events, now, no_headers)


def _labels(event: JSON) -> dict[str, str]:
    return dict(((event.get("object") or {}).get("metadata") or {}).get("labels") or {})


def _pod_rows(events: Iterable[JSON], now: Callable[[], float], no_headers: bool) -> None:
    initial: list[list[str]] = []
    shown: dict[str, list[str]] = {}  # pod → the row last printed (its age aside)
    widths: list[int] | None = None
    for event in events:
        if event.get("type") == "BOOKMARK":
            if widths is None and initial_events_end(event):
                initial.sort(key=lambda r: r[0])
                widths = [max([len(col), 12, *(len(r[i]) for r in initial)]) for i, col in enumerate(POD_COLUMNS)]
                for row in ([] if no_headers else [list(POD_COLUMNS)]) + initial:
                    click.echo(format_row(row, widths))
            continue
        row = _pod_row(event, now())
        if widths is None:
            initial.append(row)
            shown[row[0]] = row[:-1]
        elif shown.get(row[0]) != row[:-1]:
            shown[row[0]] = row[:-1]
            click.echo(format_row(row, widths))


def _pod_row(event: JSON, now: float) -> list[str]:
    obj = event.get("object") or {}
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    task = _labels(event).get(TASK_SPEC_KEY) or (meta.get("annotations") or {}).get(TASK_SPEC_KEY)
    if event.get("type") == "DELETED":
        return [str(meta.get("name")), text(task), "Deleted", "-", "-", "-", "-"]
    return [
        str(meta.get("name")),
        text(task),
        text(status.get("phase")),
        text(spec.get("nodeName")),
        text(status.get("exitCode")),
        text(status.get("restartCount")),
        age(meta.get("creationTimestamp"), now),
    ]
