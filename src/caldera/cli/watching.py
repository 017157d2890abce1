"""`caldera list -w`: the jobs table, then one more row each time a job changes, as `kubectl get -w` prints.

The rows come from the daemon's watch (every job as it is now, then each change), so
nothing is polled. A row is printed only when what it shows changed (its age and
duration aside), a deleted job gets a last row with the phase `Deleted`. Columns keep
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

from caldera.cli.common import age, human_duration, timestamp
from caldera.cli.output import format_row, with_rfc3339
from caldera.client.http import initial_events_end
from caldera.core.jobkind import JOB_TYPE_LABEL, object_resource_name
from caldera.core.selector import Selector
from caldera.system.api import JSON

COLUMNS = ("NAME", "TYPE", "QUEUE", "PHASE", "RUNNING", "RETRIES", "MIN", "AGE", "DURATION")
MIN_WIDTHS = {"NAME": 16, "TYPE": 10, "QUEUE": 8, "PHASE": 11, "AGE": 5, "DURATION": 8}
TIMED = 2  # the last columns (age, duration) change with time alone: not a reason to print a row


class Watcher(Protocol):
    def watch(
        self,
        kinds: tuple[str, ...] = (),
        namespace: str | None = None,
        since: int | None = None,
        timeout: float | None = None,
    ) -> Iterator[JSON]: ...


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
    if output == "name":
        for event in events:
            if event.get("type") != "BOOKMARK":
                click.echo(object_resource_name(event.get("object") or {}))
        return
    _table(events, namespace is None, now, no_headers)


def _selected(event: JSON, selector: Selector | None) -> bool:
    """Bookmarks always; a job's event when its labels match (a deletion carries the labels it had)."""
    if selector is None or event.get("type") == "BOOKMARK":
        return True
    return selector.matches(((event.get("object") or {}).get("metadata") or {}).get("labels"))


def _table(events: Iterable[JSON], all_namespaces: bool, now: Callable[[], float], no_headers: bool) -> None:
    columns = ("NAMESPACE", *COLUMNS) if all_namespaces else COLUMNS
    initial: list[list[str]] = []
    shown: dict[str, list[str]] = {}  # job key → the row last printed for it (timed columns aside)
    widths: list[int] | None = None
    for event in events:
        if widths is None:
            if initial_events_end(event):
                widths = _widths(columns, initial)
                for line in ([] if no_headers else [list(columns)]) + initial:
                    click.echo(format_row(line, widths))
            elif event.get("type") != "BOOKMARK":
                row, key = _row(event, all_namespaces, now())
                shown[key] = row[:-TIMED]
                initial.append(row)
            continue
        if event.get("type") == "BOOKMARK":
            continue
        row, key = _row(event, all_namespaces, now())
        if shown.get(key) != row[:-TIMED]:
            shown[key] = row[:-TIMED]
            click.echo(format_row(row, widths))
        if event.get("type") == "DELETED":
            shown.pop(key, None)


def _row(event: JSON, all_namespaces: bool, now: float) -> tuple[list[str], str]:
    obj = event.get("object") or {}
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    key = f"{meta.get('namespace')}/{meta.get('name')}"
    kind = _cell((meta.get("labels") or {}).get(JOB_TYPE_LABEL))
    if event.get("type") == "DELETED":
        row = [str(meta.get("name")), kind, "-", "Deleted", "-", "-", "-", "-", "-"]
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
        ]
    return ([str(meta.get("namespace")), *row] if all_namespaces else row), key


def _cell(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def _widths(columns: tuple[str, ...], rows: list[list[str]]) -> list[int]:
    return [max([len(c), MIN_WIDTHS.get(c, 0), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
