"""How the verbs print what they read, as kubectl prints it.

- A table: each column as wide as its widest cell, columns three spaces apart, an
  upper-case header unless `--no-headers`, and no space at the end of a line
  (kubectl's tabwriter). Cells are plain text: nothing in them is read as markup.
- `-o wide`: the same table with more columns; `-o name`: one `KIND.GROUP/NAME` a line.
- `-o json` and `-o yaml`: the data; several objects as a Kubernetes `List`
  (`{"apiVersion": "v1", "kind": "List", "metadata": {...}, "items": [...]}`); every
  timestamp as an RFC 3339 text in UTC (`2024-05-01T12:00:03Z`), as the Kubernetes API
  writes them, whatever the cluster stored (seconds since the epoch, on the embedded one).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import click
import yaml

from caldera.core.jobkind import resource_name
from caldera.core.objects import JOB_API

# Fields that hold a point in time, wherever they appear in an object, a summary or an event.
TIME_FIELDS = frozenset(
    {
        "creationTimestamp",
        "deletionTimestamp",
        "startTime",
        "completionTime",
        "finishTime",
        "lastTransitionTime",
        "lastUpdateTime",
        "lastScheduleTime",
        "firstTimestamp",
        "lastTimestamp",
        "eventTime",
        "time",
    }
)


def rfc3339(value: object) -> object:
    """A time as RFC 3339 (UTC, whole seconds, as Kubernetes' metav1.Time); text and absent values as they are.

    Seconds since the epoch ≤ 0 are "never set" (the embedded cluster's 0.0) and become None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if value <= 0:
        return None
    return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def with_rfc3339(data: object) -> object:
    """`data` with every time field (TIME_FIELDS, at any depth) as RFC 3339 text."""
    if isinstance(data, Mapping):
        return {k: rfc3339(v) if k in TIME_FIELDS else with_rfc3339(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [with_rfc3339(v) for v in data]
    return data


def as_list(items: Iterable[object]) -> dict[str, Any]:
    """Several objects as kubectl prints them: one `List`."""
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(items)}


def emit(data: object, output: str) -> None:
    """`data` as JSON or YAML on stdout (keys in the order the API gives them, times as RFC 3339)."""
    data = with_rfc3339(data)
    if output == "yaml":
        click.echo(yaml.safe_dump(data, sort_keys=False, default_flow_style=False), nl=False)
    else:
        click.echo(json.dumps(data, indent=2))


def emit_names(names: Iterable[str]) -> None:
    """`-o name`: one `KIND.GROUP/NAME` a line."""
    for name in names:
        click.echo(name)


def job_resource_name(summary: Mapping[str, Any]) -> str:
    """`job.batch.volcano.sh/NAME`, or `tfjob.kubeflow.org/NAME` for a job applied as a Kubeflow kind."""
    return resource_name(
        str(summary.get("apiVersion") or JOB_API), str(summary.get("kind") or "Job"), str(summary["name"])
    )


class TextTable:
    """A table as kubectl prints it (see the module docstring); `title`, when given, is a line above it."""

    def __init__(self, *columns: str, title: str | None = None) -> None:
        self.columns: list[str] = list(columns)
        self.rows: list[list[str]] = []
        self.title = title

    def add_column(self, name: str) -> None:
        self.columns.append(name)

    def add_row(self, *cells: object) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells in a table of {len(self.columns)} columns")
        self.rows.append([str(c) for c in cells])

    def lines(self, headers: bool = True) -> list[str]:
        shown = ([self.columns] if headers else []) + self.rows
        if not shown:
            return []
        widths = [max(len(r[i]) for r in shown) for i in range(len(self.columns))]
        out = [format_row(r, widths) for r in shown]
        return ([f"{self.title}:"] if self.title else []) + out


def format_row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "   ".join(cell.ljust(w) for cell, w in zip(cells, widths, strict=True)).rstrip()


def print_table(t: TextTable, no_headers: bool = False) -> None:
    for line in t.lines(headers=not no_headers):
        click.echo(line)
