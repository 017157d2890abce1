"""`caldera list -w`: the jobs table, then one more row each time a job changes, as `kubectl get -w` prints.

The rows come from the daemon's watch (every job as it is now, then each change), so
nothing is polled. A row is printed only when what it shows changed (its age and
duration aside), a deleted job gets a last row with the phase `Deleted`. REASON is
`list`'s: why the job is held up (NeverFits, Unschedulable, CrashLoopBackOff), which no
Job object carries: it is read with the jobs' summaries once the watch's first objects
are in (one `list`), then again for one job (one `get`) when the watch shows a change to
an unfinished job or to its PodGroup (where the scheduler writes why a gang waits; on
Kubernetes, whose watch takes one kind, the jobs' changes only). Columns keep
the widths the first rows gave them, so the stream reads as one table. With `-o json`
every watch event is printed as one JSON line ({"type", "object"}, Kubernetes' shape,
times as RFC 3339), with `-o yaml` as one document, with `-o name` the job's name. A
selector (`-l`) keeps the jobs whose labels match. It runs until interrupted (Ctrl-C:
exit code 130).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

import click
import yaml

from caldera.cli.common import age, human_duration, timestamp, waiting_reason
from caldera.cli.output import format_row, with_rfc3339
from caldera.client.http import initial_events_end
from caldera.core.errors import CalderaError
from caldera.core.jobkind import JOB_TYPE_LABEL, object_resource_name
from caldera.core.selector import Selector
from caldera.system.api import JSON, NotFound

COLUMNS = ("NAME", "TYPE", "QUEUE", "PHASE", "RUNNING", "RETRIES", "MIN", "AGE", "DURATION", "REASON")
MIN_WIDTHS = {"NAME": 16, "TYPE": 10, "QUEUE": 8, "PHASE": 11, "AGE": 5, "DURATION": 8}
TIMED = ("AGE", "DURATION")  # they change with time alone: not a reason to print a row
FINISHED = ("Completed", "Failed", "Terminated", "Aborted")  # nothing holds such a job up: no `get` for it


class Watcher(Protocol):
    def watch(
        self,
        kinds: tuple[str, ...] = (),
        namespace: str | None = None,
        since: int | None = None,
        timeout: float | None = None,
    ) -> Iterator[JSON]: ...

    def list_jobs(self, namespace: str | None = None) -> list[JSON]: ...

    def get_job(self, namespace: str, name: str) -> JSON: ...


def watch_jobs(
    cluster: Watcher,
    namespace: str | None,
    output: str,
    now: Callable[[], float],
    *,
    selector: Selector | None = None,
    no_headers: bool = False,
) -> None:
    """Print the jobs of `namespace` (None: all, with a NAMESPACE column), then their changes, until stopped."""
    if output in ("table", "wide"):
        events = (e for e in _jobs_and_podgroups(cluster, namespace) if _selected(e, selector))
        _table(cluster, events, namespace, now, no_headers)
        return
    events = (e for e in cluster.watch(("Job",), namespace) if _selected(e, selector))
    if output == "json":
        for event in events:
            if event.get("type") != "BOOKMARK":
                click.echo(json.dumps(with_rfc3339(event), separators=(",", ":")))
        return
    if output == "yaml":
        for event in events:
            if event.get("type") != "BOOKMARK":
                click.echo("---\n" + yaml.safe_dump(with_rfc3339(event), sort_keys=False), nl=False)
        return
    for event in events:  # -o name
        if event.get("type") != "BOOKMARK":
            click.echo(object_resource_name(event.get("object") or {}))


def _jobs_and_podgroups(cluster: Watcher, namespace: str | None) -> Iterator[JSON]:
    """The watch of Jobs and PodGroups; of Jobs only where a watch takes one kind (Kubernetes): REASON then
    follows the jobs' own changes."""
    events = iter(cluster.watch(("Job", "PodGroup"), namespace))
    try:
        first = next(events, None)
    except CalderaError:
        yield from cluster.watch(("Job",), namespace)
        return
    if first is not None:
        yield first
    yield from events


def _selected(event: JSON, selector: Selector | None) -> bool:
    """Bookmarks always; a job's event when its labels match (a deletion carries the labels it had)."""
    if selector is None or event.get("type") == "BOOKMARK":
        return True
    return selector.matches(((event.get("object") or {}).get("metadata") or {}).get("labels"))


def _table(
    cluster: Watcher, events: Iterable[JSON], namespace: str | None, now: Callable[[], float], no_headers: bool
) -> None:
    all_namespaces = namespace is None
    columns = ("NAMESPACE", *COLUMNS) if all_namespaces else COLUMNS
    timed = {columns.index(c) for c in TIMED}
    jobs: dict[str, JSON] = {}  # job key → its last Job event (a PodGroup's change redraws the job's row from it)
    shown: dict[str, list[str]] = {}  # job key → the row last printed for it (timed columns aside)
    widths: list[int] | None = None

    def reason(key: str) -> str:
        namespace, _, name = key.partition("/")
        try:
            return waiting_reason(cluster.get_job(namespace, name))
        except NotFound:  # deleted since: its DELETED event follows
            return ""

    for event in events:
        kind = (event.get("object") or {}).get("kind")
        if widths is None:
            if initial_events_end(event):
                reasons = {f"{s['namespace']}/{s['name']}": waiting_reason(s) for s in cluster.list_jobs(namespace)}
                rows = [_row(e, all_namespaces, now(), reasons.get(key, "")) for key, e in jobs.items()]
                widths = _widths(columns, rows)
                for row in ([] if no_headers else [list(columns)]) + rows:
                    click.echo(format_row(row, widths))
                shown = {key: _untimed(row, timed) for key, row in zip(jobs, rows, strict=True)}
            elif kind == "Job" and event.get("type") != "BOOKMARK":
                jobs[_key(event)] = event
            continue
        if event.get("type") == "BOOKMARK":
            continue
        if kind == "PodGroup":  # why a gang waits changed, perhaps: redraw its job's row
            key = _job_of_podgroup(_key(event), jobs)
            if key is None:
                continue
            event = jobs[key]
        else:
            key = _key(event)
            jobs[key] = event
        phase = (((event.get("object") or {}).get("status") or {}).get("state") or {}).get("phase")
        deleted = event.get("type") == "DELETED"
        row = _row(event, all_namespaces, now(), "" if deleted or phase in FINISHED else reason(key))
        if shown.get(key) != _untimed(row, timed):
            shown[key] = _untimed(row, timed)
            click.echo(format_row(row, widths))
        if deleted:
            shown.pop(key, None)
            jobs.pop(key, None)


def _key(event: JSON) -> str:
    meta = (event.get("object") or {}).get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _job_of_podgroup(podgroup: str, jobs: dict[str, JSON]) -> str | None:
    """The job a PodGroup `<job>-<uid>` belongs to: the longest job key it starts with (None: not one shown)."""
    owners = [key for key in jobs if podgroup == key or podgroup.startswith(key + "-")]
    return max(owners, key=len, default=None)


def _untimed(row: list[str], timed: set[int]) -> list[str]:
    return [cell for i, cell in enumerate(row) if i not in timed]


def _row(event: JSON, all_namespaces: bool, now: float, reason: str) -> list[str]:
    obj = event.get("object") or {}
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    kind = _cell((meta.get("labels") or {}).get(JOB_TYPE_LABEL))
    if event.get("type") == "DELETED":
        row = [str(meta.get("name")), kind, "-", "Deleted", "-", "-", "-", "-", "-", "-"]
    else:
        pods = sum(int(t.get("replicas") or 0) for t in spec.get("tasks") or [])
        start, end = timestamp(status.get("startTime")), timestamp(status.get("completionTime"))
        row = [
            str(meta.get("name")),
            kind,
            _cell(spec.get("queue")),
            _cell((status.get("state") or {}).get("phase")),
            f"{int(status.get('running') or 0)}/{pods}",
            _cell(status.get("retryCount")),
            _cell(spec.get("minAvailable")),
            age(meta.get("creationTimestamp"), now),
            "-" if start is None else human_duration((end if end is not None else now) - start),
            _cell(reason),
        ]
    return [str(meta.get("namespace")), *row] if all_namespaces else row


def _cell(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def _widths(columns: tuple[str, ...], rows: list[list[str]]) -> list[int]:
    return [max([len(c), MIN_WIDTHS.get(c, 0), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
