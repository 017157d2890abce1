"""Public traces as simulator workloads.

Philly (`philly.csv`: timestamp, duration, num_gpus, gpu_time, cluster): each
job is one gang of `num_gpus` one-GPU pods in the queue named after its virtual
cluster, running for `duration` seconds; arrivals are seconds after the first
submission, rows sorted by submit time. Jobs are built directly (not through
YAML) because a replay reads tens of thousands of them.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from caldera.core import objects as o
from caldera.core.errors import FieldError, ValidationError
from caldera.core.resources import GPU
from caldera.sim.inputs import JobArrival

PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")


@dataclass(frozen=True, slots=True)
class TraceRow:
    line: int
    submit: float  # seconds since the Unix epoch (the trace's wall clock)
    duration: float
    gpus: int
    queue: str


def read_philly(path: str | Path) -> tuple[list[TraceRow], list[FieldError]]:
    """The trace's rows sorted by submit time, and one error per malformed row (by line number)."""
    rows: list[TraceRow] = []
    errors: list[FieldError] = []
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ValidationError([FieldError("", f"cannot read the trace: {e.strerror or e}")], str(path)) from None
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None or tuple(h.strip() for h in header[: len(PHILLY_COLUMNS)]) != PHILLY_COLUMNS:
        raise ValidationError([FieldError("line 1", f"expected the columns {', '.join(PHILLY_COLUMNS)}")], str(path))
    for line, rec in enumerate(reader, start=2):
        row = _philly_row(line, rec, errors)
        if row is not None:
            rows.append(row)
    rows.sort(key=lambda r: (r.submit, r.line))
    return rows, errors


def _philly_row(line: int, rec: list[str], errors: list[FieldError]) -> TraceRow | None:
    where = f"line {line}"
    if len(rec) < len(PHILLY_COLUMNS):
        errors.append(FieldError(where, f"expected {len(PHILLY_COLUMNS)} columns, found {len(rec)}"))
        return None
    try:
        submit = datetime.strptime(rec[0].strip(), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        errors.append(FieldError(f"{where}: timestamp", f"{rec[0]!r} is not YYYY-MM-DD HH:MM:SS"))
        return None
    try:
        duration = float(rec[1])
        gpus = int(rec[2])
    except ValueError:
        errors.append(FieldError(where, "duration must be a number and num_gpus an integer"))
        return None
    if duration <= 0 or gpus <= 0 or not rec[4].strip():
        errors.append(FieldError(where, "duration and num_gpus must be positive and cluster set"))
        return None
    return TraceRow(line, submit, duration, gpus, rec[4].strip())


def gang_job(name: str, queue: str, gpus: int, *, namespace: str = "default") -> o.Job:
    """A job of `gpus` one-GPU workers that must all run together."""
    container = o.Container(name="worker", requests={GPU: 1000.0})
    template = o.PodTemplate(spec=o.PodSpec(containers=(container,), restart_policy="Never"))
    task = o.TaskSpec(name="worker", replicas=gpus, template=template)
    spec = o.JobSpec(tasks=(task,), min_available=gpus, queue=queue)
    return o.Job(o.ObjectMeta(name=name, namespace=namespace), spec)


def philly_arrivals(rows: list[TraceRow]) -> Iterator[JobArrival]:
    if not rows:
        return
    start = rows[0].submit
    for i, r in enumerate(rows):
        yield JobArrival(r.submit - start, gang_job(f"philly-{i}", r.queue, r.gpus), r.duration)


def queues_of(rows: list[TraceRow]) -> list[o.Queue]:
    return [o.Queue(o.ObjectMeta(name=q, namespace="")) for q in sorted({r.queue for r in rows})]
