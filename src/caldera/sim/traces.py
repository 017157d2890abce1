"""The Philly trace as simulator workloads.

Philly (`philly.csv`: timestamp, duration, num_gpus, gpu_time, cluster; CC BY 4.0,
Jeon et al., ATC'19): each job is one gang of `num_gpus` one-GPU pods in the
queue named after its virtual cluster, running for `duration` seconds. The rows
are not sorted in the file: `read_philly` sorts them by submit time (ties by line,
so the order is the same on every run). Jobs are built directly (not through
YAML) because a replay reads tens of thousands of them.

A malformed row is not fatal: it is returned as an error naming its line and
skipped, so one bad line does not stop a replay of 82,000 good ones. Blank lines
(the file ends with one) are not rows.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from caldera.core import objects as o
from caldera.core.elastic import max_key
from caldera.core.errors import FieldError, ValidationError
from caldera.core.resources import GPU
from caldera.sim import speedup
from caldera.sim.inputs import JobArrival

PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
CHECKPOINT_INTERVAL = "caldera.dev/checkpoint-interval"  # the simulator resumes such a job from its last checkpoint


@dataclass(frozen=True, slots=True)
class TraceRow:
    line: int
    submit: float  # seconds since the Unix epoch (the trace's wall clock, read as UTC)
    duration: float
    gpus: int
    queue: str


def read_csv_lines(path: str | Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each non-blank line of a CSV file; the header is line 1."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ValidationError([FieldError("", f"cannot read the trace: {e.strerror or e}")], str(path)) from None
    except UnicodeDecodeError as e:
        raise ValidationError([FieldError("", f"not a UTF-8 text file (byte {e.start})")], str(path)) from None
    # csv.reader over the lines keeps the numbering equal to the file's (no quoted newlines in traces).
    for line, rec in enumerate(csv.reader(text.splitlines()), start=1):
        if rec and any(f.strip() for f in rec):
            yield line, rec


def check_header(path: str | Path, header: list[str] | None, columns: tuple[str, ...]) -> None:
    if header is None or tuple(h.strip() for h in header[: len(columns)]) != columns:
        raise ValidationError([FieldError("line 1", f"expected the columns {', '.join(columns)}")], str(path))


def read_philly(path: str | Path) -> tuple[list[TraceRow], list[FieldError]]:
    """The trace's rows sorted by submit time, and one error per malformed row (by line number)."""
    lines = read_csv_lines(path)
    first = next(lines, None)
    check_header(path, first[1] if first else None, PHILLY_COLUMNS)
    rows: list[TraceRow] = []
    errors: list[FieldError] = []
    for line, rec in lines:
        row = _philly_row(line, rec, errors)
        if row is not None:
            rows.append(row)
    rows.sort(key=lambda r: (r.submit, r.line))
    return rows, errors


def _timestamp(text: str) -> float | None:
    # fromisoformat is ~10x faster than strptime; the length check keeps the format strict.
    if len(text) != 19 or text[10] != " ":
        return None
    try:
        return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _philly_row(line: int, rec: list[str], errors: list[FieldError]) -> TraceRow | None:
    where = f"line {line}"
    if len(rec) < len(PHILLY_COLUMNS):
        errors.append(FieldError(where, f"expected {len(PHILLY_COLUMNS)} columns, found {len(rec)}"))
        return None
    submit = _timestamp(rec[0].strip())
    if submit is None:
        errors.append(FieldError(f"{where}: timestamp", f"{rec[0]!r} is not YYYY-MM-DD HH:MM:SS"))
        return None
    try:
        duration = float(rec[1])
        gpus = int(rec[2])
    except ValueError:
        errors.append(FieldError(where, "duration must be a number and num_gpus an integer"))
        return None
    if not duration > 0 or duration == float("inf") or gpus <= 0 or not rec[4].strip():
        errors.append(FieldError(where, "duration and num_gpus must be positive and cluster set"))
        return None
    return TraceRow(line, submit, duration, gpus, rec[4].strip())


def checkpoint_annotations(checkpoint: float | None) -> dict[str, str]:
    """The annotation that makes a preempted job resume from its last checkpoint (every `checkpoint` seconds)."""
    return {} if checkpoint is None else {CHECKPOINT_INTERVAL: f"{checkpoint:g}"}


def gang_job(
    name: str,
    queue: str,
    gpus: int,
    *,
    namespace: str = "default",
    checkpoint: float | None = None,
    elastic: Elastic | None = None,
) -> o.Job:
    """A job of `gpus` one-GPU workers that must all run together.

    One-GPU pods let a gang larger than a node span several nodes (a 16-GPU job
    takes two whole 8-GPU nodes when binpack keeps them free), as Philly's
    multi-node jobs did. With `elastic` it runs on min to max workers instead,
    its duration being its run on `gpus` (`speedup.py`)."""
    container = o.Container(name="worker", requests={GPU: 1000.0})
    template = o.PodTemplate(spec=o.PodSpec(containers=(container,), restart_policy="Never"))
    annotations = checkpoint_annotations(checkpoint)
    low = high = gpus
    if elastic is not None:
        low, high = elastic.low, elastic.high
        annotations[max_key("worker")] = str(high)
        annotations[speedup.MODEL] = elastic.model
        annotations[speedup.REFERENCE] = str(gpus)
    task = o.TaskSpec(name="worker", replicas=high, template=template, min_available=None if low == high else low)
    spec = o.JobSpec(tasks=(task,), min_available=low, queue=queue)
    meta = o.ObjectMeta(name=name, namespace=namespace, annotations=annotations)
    return o.Job(meta, spec)


@dataclass(frozen=True, slots=True)
class Elastic:
    """An elastic job's range of workers and its speed-up model's size class (`speedup.CLASS_NOISE`)."""

    low: int
    high: int
    model: str


def elastic_range_of(gpus: int, duration: float, cluster_gpus: int) -> Elastic:
    """The range a trace job made elastic gets: from half its GPUs to where its goodput peaks.

    Its class is Pollux's by GPU-hours (< 1, < 10, < 100, more); the top is the size with the highest
    goodput up to 4 × its GPUs (and the cluster), never below its GPUs."""
    gpu_hours = gpus * duration / 3600.0
    model = "small" if gpu_hours < 1 else "medium" if gpu_hours < 10 else "large" if gpu_hours < 100 else "xlarge"
    model_of = speedup.Speedup(gpus, speedup.CLASS_NOISE[model])
    high = max(gpus, model_of.best_size(max(min(4 * gpus, cluster_gpus), 1)))
    return Elastic(max(1, gpus // 2), high, model)


def philly_arrivals(
    rows: list[TraceRow],
    origin: float | None = None,
    rate_scale: float = 1.0,
    checkpoint: float | None = None,
    elastic_gpus: int = 0,
) -> Iterator[JobArrival]:
    """One gang job per row, arriving (submit − origin) / rate_scale seconds into the run.

    The origin defaults to the first submission. A job is named after its line in
    the file, so the same trace row has the same name in every sample of it. With
    `checkpoint`, every job checkpoints that often (the trace does not say). With
    `elastic_gpus` (the cluster's GPUs), every job is elastic (`elastic_range_of`)."""
    if not rows:
        return
    start = rows[0].submit if origin is None else origin
    for r in rows:
        elastic = elastic_range_of(r.gpus, r.duration, elastic_gpus) if elastic_gpus else None
        job = gang_job(f"philly-{r.line}", r.queue, r.gpus, checkpoint=checkpoint, elastic=elastic)
        yield JobArrival((r.submit - start) / rate_scale, job, r.duration)


def queues_of(rows: list[TraceRow]) -> list[o.Queue]:
    return [o.Queue(o.ObjectMeta(name=q, namespace="")) for q in sorted({r.queue for r in rows})]
