"""Reading `caldera simulate`'s cluster and workload files, with errors naming file, field and rule.

CLUSTER.yaml: `nodes` (name, count, labels, taints, allocatable), `queues`
(Volcano Queue manifests as they are) and `priorityClasses`.
WORKLOAD.yaml: `jobs` (submitTime, duration, durations, exitCode, exitCodes and a
Volcano Job `manifest`) and optional `faults` (a pod's process dies, a pod is
evicted, a node is lost).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from caldera.core import objects as o
from caldera.core.errors import FieldError, ValidationError
from caldera.core.jobmanifest import parse_job
from caldera.core.manifest import parse_priority_class, parse_queue
from caldera.core.schema import FieldReader, child, describe
from caldera.core.validation import validate_job, validate_queue

UNTIL_KILLED = None


@dataclass(frozen=True, slots=True)
class Cluster:
    nodes: tuple[o.Node, ...]
    queues: tuple[o.Queue, ...]
    priority_classes: tuple[o.PriorityClass, ...]


@dataclass(frozen=True, slots=True)
class JobArrival:
    submit_time: float
    job: o.Job
    duration: float | None  # seconds each pod runs once started; None: until killed
    durations: Mapping[str, float | None] = field(default_factory=dict)  # per task, overrides duration
    exit_code: int = 0
    exit_codes: Mapping[str, int] = field(default_factory=dict)

    def run_of(self, task: str) -> tuple[float | None, int]:
        """How long a pod of `task` runs and the exit code it ends with."""
        duration = self.durations.get(task, self.duration)
        return duration, self.exit_codes.get(task, self.exit_code)


@dataclass(frozen=True, slots=True)
class Fault:
    time: float
    pod: str = ""
    node: str = ""
    exit_code: int | None = None
    evict: bool = False
    down: bool = False


@dataclass(frozen=True, slots=True)
class Workload:
    jobs: tuple[JobArrival, ...]
    faults: tuple[Fault, ...] = ()


def read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as e:
        raise ValidationError([FieldError("", f"cannot read the file: {e.strerror or e}")], path) from None


def read_yaml(path: str) -> object:
    text = read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or "syntax error"
        raise ValidationError([FieldError("", f"{where}not valid YAML ({problem})")], path) from None


def _number(r: FieldReader, doc: Mapping[str, object], key: str, path: str, *, minimum: float = 0.0) -> float | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        r.error(child(path, key), f"must be a number of seconds, not {describe(value)}")
        return None
    if value < minimum:
        r.error(child(path, key), f"must be >= {minimum:g}")
        return None
    return float(value)


def _top(r: FieldReader, doc: object, source: str, fields: tuple[str, ...]) -> Mapping[str, object]:
    if not isinstance(doc, Mapping):
        raise ValidationError(
            [FieldError("", f"must be a mapping with {', '.join(fields)}, not {describe(doc)}")], source
        )
    r.known(doc, "", fields)
    return doc


def parse_cluster(doc: object, source: str) -> Cluster:
    r = FieldReader()
    top = _top(r, doc, source, ("nodes", "queues", "priorityClasses"))
    nodes: list[o.Node] = []
    names: set[str] = set()
    for path, raw in r.items(top, "nodes", ""):
        spec = r.mapping(raw, path)
        if spec is None:
            continue
        r.known(spec, path, ("name", "count", "labels", "taints", "allocatable"))
        if not r.required(spec, "name", path) or not r.required(spec, "allocatable", path):
            continue
        name = r.string(spec, "name", path)
        count = r.integer(spec, "count", path)
        if count is not None and count < 1:
            r.error(child(path, "count"), "must be >= 1")
            continue
        count = count or 1
        labels = r.string_map(spec, "labels", path)
        alloc = r.resources(spec, "allocatable", path)
        taints = []
        for tpath, traw in r.items(spec, "taints", path):
            t = r.mapping(traw, tpath)
            if t is None:
                continue
            r.known(t, tpath, ("key", "value", "effect"))
            effect = r.choice(t, "effect", tpath, ("NoSchedule", "PreferNoSchedule", "NoExecute"), "NoSchedule")
            if r.required(t, "key", tpath):
                taints.append(o.Taint(r.string(t, "key", tpath), r.string(t, "value", tpath), effect))
        for i in range(count):
            node_name = f"{name}-{i}" if count > 1 else name
            if node_name in names:
                r.error(child(path, "name"), f"node {node_name!r} is defined twice")
            names.add(node_name)
            meta = o.ObjectMeta(name=node_name, namespace="", labels={**labels, "kubernetes.io/hostname": node_name})
            nodes.append(o.Node(meta, allocatable=dict(alloc), taints=tuple(taints)))
    queues: list[o.Queue] = []
    for path, raw in r.items(top, "queues", ""):
        try:
            q = parse_queue(raw if isinstance(raw, Mapping) else {}, source) if isinstance(raw, Mapping) else None
        except ValidationError as e:
            r.errors.extend(FieldError(child(path, err.path), err.rule) for err in e.errors)
            continue
        if q is None:
            r.error(path, f"must be a Queue manifest, not {describe(raw)}")
            continue
        r.errors.extend(FieldError(child(path, err.path), err.rule) for err in validate_queue(q))
        queues.append(q)
    classes: list[o.PriorityClass] = []
    for path, raw in r.items(top, "priorityClasses", ""):
        if not isinstance(raw, Mapping):
            r.error(path, f"must be a PriorityClass, not {describe(raw)}")
            continue
        try:
            classes.append(parse_priority_class(raw, source))
        except ValidationError as e:
            r.errors.extend(FieldError(child(path, err.path), err.rule) for err in e.errors)
    r.raise_if_errors(source)
    return Cluster(tuple(nodes), tuple(queues), tuple(classes))


def parse_workload(doc: object, source: str) -> Workload:
    r = FieldReader()
    top = _top(r, doc, source, ("jobs", "faults"))
    jobs: list[JobArrival] = []
    for path, raw in r.items(top, "jobs", ""):
        spec = r.mapping(raw, path)
        if spec is None:
            continue
        r.known(spec, path, ("submitTime", "duration", "durations", "exitCode", "exitCodes", "manifest"))
        if not r.required(spec, "manifest", path):
            continue
        try:
            job = parse_job(spec["manifest"] if isinstance(spec["manifest"], Mapping) else {}, source)
        except ValidationError as e:
            r.errors.extend(FieldError(child(child(path, "manifest"), err.path), err.rule) for err in e.errors)
            continue
        if not isinstance(spec["manifest"], Mapping):
            r.error(child(path, "manifest"), f"must be a Volcano Job manifest, not {describe(spec['manifest'])}")
            continue
        r.errors.extend(FieldError(child(child(path, "manifest"), e.path), e.rule) for e in validate_job(job))
        durations: dict[str, float | None] = {}
        dmap = r.sub(spec, "durations", path)
        for task, value in (dmap or {}).items():
            if value is not None:
                value = _number(r, dmap or {}, task, child(path, "durations"))
            durations[task] = value
        codes: dict[str, int] = {}
        cmap = r.sub(spec, "exitCodes", path)
        for task in cmap or {}:
            code = r.integer(cmap or {}, task, child(path, "exitCodes"))
            if code is not None:
                codes[task] = code
        for task in [*durations, *codes]:
            if job.spec.task(task) is None:
                r.error(child(path, "durations" if task in durations else "exitCodes"), f"job has no task {task!r}")
        jobs.append(
            JobArrival(
                submit_time=_number(r, spec, "submitTime", path) or 0.0,
                job=job,
                duration=_number(r, spec, "duration", path),
                durations=durations,
                exit_code=r.integer(spec, "exitCode", path) or 0,
                exit_codes=codes,
            )
        )
    seen: set[str] = set()
    for (path, _), arrival in zip(r.items(top, "jobs", ""), jobs, strict=False):
        if arrival.job.key in seen:
            r.error(child(path, "manifest.metadata.name"), f"job {arrival.job.key} is submitted twice")
        seen.add(arrival.job.key)
    faults = [f for path, raw in r.items(top, "faults", "") if (f := _fault(r, raw, path)) is not None]
    r.raise_if_errors(source)
    return Workload(tuple(jobs), tuple(faults))


def _fault(r: FieldReader, raw: object, path: str) -> Fault | None:
    spec = r.mapping(raw, path)
    if spec is None:
        return None
    r.known(spec, path, ("time", "pod", "node", "exitCode", "evict", "down"))
    if not r.required(spec, "time", path):
        return None
    time = _number(r, spec, "time", path) or 0.0
    pod, node = r.string(spec, "pod", path), r.string(spec, "node", path)
    if bool(pod) == bool(node):
        r.error(path, "a fault names exactly one of pod or node")
        return None
    if node:
        if not r.boolean(spec, "down", path, False):
            r.error(child(path, "down"), "a node fault must say down: true")
            return None
        return Fault(time, node=node, down=True)
    evict = r.boolean(spec, "evict", path, False)
    code = r.integer(spec, "exitCode", path)
    if evict == (code is not None):
        r.error(path, "a pod fault has exactly one of exitCode or evict: true")
        return None
    return Fault(time, pod=pod, exit_code=code, evict=evict)


def load(cluster_path: str, workload_path: str) -> tuple[Cluster, Workload]:
    cluster = parse_cluster(read_yaml(cluster_path), cluster_path)
    workload = parse_workload(read_yaml(workload_path), workload_path)
    return cluster, workload
