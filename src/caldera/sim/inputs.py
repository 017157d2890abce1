"""Reading `caldera simulate`'s cluster and workload files, with errors naming file, field and rule.

CLUSTER.yaml: `nodes` (name, count, labels, taints, allocatable), `queues`
(Volcano Queue manifests as they are) and `priorityClasses`.
WORKLOAD.yaml: `jobs` (submitTime, duration, durations, exitCode, exitCodes and a
Volcano Job `manifest`), optional `faults` (a pod's process dies, a pod is
evicted, a node is lost) and, as a caldera extension beyond the issue's contract,
optional `commands`: `{time: 300, job: myjob, action: AbortJob}` issues a user
command at that time, as `vcctl job suspend|resume|...` does (actions AbortJob,
ResumeJob, RestartJob, TerminateJob, CompleteJob).

Invariant: what parses is consistent: every number is finite, every fault names a
pod some job of the workload can have (or a node of the cluster, checked by
`load`), every command names a job of the workload.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from caldera.controller.pods import pod_name
from caldera.core import objects as o
from caldera.core.errors import FieldError, ValidationError
from caldera.core.jobmanifest import parse_job
from caldera.core.loading import load_data
from caldera.core.manifest import parse_priority_class, parse_queue
from caldera.core.schema import FieldReader, child, describe, item
from caldera.core.validation import dns1123_subdomain_error, validate_queue
from caldera.utils.records import immutable

UNTIL_KILLED = None
# What a user may ask of a job by command (vcctl's verbs); the targeted restarts need a pod event.
COMMAND_ACTIONS = ("AbortJob", "ResumeJob", "RestartJob", "TerminateJob", "CompleteJob")


@dataclass(frozen=True, slots=True)
class Cluster:
    nodes: tuple[o.Node, ...]
    queues: tuple[o.Queue, ...]
    priority_classes: tuple[o.PriorityClass, ...]


@immutable
class JobArrival:
    submit_time: float
    job: o.Job
    duration: float | None  # seconds each pod runs once started; None: until killed
    durations: Mapping[str, float | None] = field(default_factory=dict)  # per task, overrides duration
    exit_code: int = 0
    exit_codes: Mapping[str, int] = field(default_factory=dict)
    valid: bool = False  # `job` passed `validate_job` as it is (read from a manifest): admission checks the rest

    def run_of(self, task: str) -> tuple[float | None, int]:
        """How long a pod of `task` runs and the exit code it ends with."""
        duration = self.durations.get(task, self.duration)
        return duration, self.exit_codes.get(task, self.exit_code)


@dataclass(frozen=True, slots=True)
class Fault:
    time: float
    pod: str = ""  # namespace/name once parsed
    node: str = ""
    exit_code: int | None = None
    evict: bool = False
    down: bool = False


@dataclass(frozen=True, slots=True)
class Command:
    time: float
    job: str  # namespace/name
    action: str


@dataclass(frozen=True, slots=True)
class Workload:
    jobs: tuple[JobArrival, ...]
    faults: tuple[Fault, ...] = ()
    commands: tuple[Command, ...] = ()


def read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ValidationError([FieldError("", f"cannot read the file: {e.strerror or e}")], path) from None
    except UnicodeDecodeError as e:
        raise ValidationError([FieldError("", f"not a UTF-8 text file (byte {e.start})")], path) from None


def read_yaml(path: str) -> object:
    """The document in the file: JSON if its name ends in .json (`json`), else YAML (libyaml's loader)."""
    return load_data(read_text(path), path)


def _number(r: FieldReader, doc: Mapping[str, object], key: str, path: str, *, minimum: float = 0.0) -> float | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        r.error(child(path, key), f"must be a number of seconds, not {describe(value)}")
        return None
    if not math.isfinite(value):  # YAML's .nan and .inf would stop the virtual clock or never come
        r.error(child(path, key), "must be a finite number")
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
    top = r.mapping(doc, "")
    r.raise_if_errors(source)
    assert top is not None  # a mapping with string keys, checked just above
    r.known(top, "", fields)
    return top


def parse_cluster(doc: object, source: str) -> Cluster:
    r = FieldReader()
    top = _top(r, doc, source, ("nodes", "queues", "priorityClasses"))
    nodes: list[o.Node] = []
    names: set[str] = set()
    for path, raw in r.items(top, "nodes", ""):
        spec = r.mapping(raw, path)
        if spec is None:
            if raw is None:
                r.error(path, "must be a node, not null")
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
            if (why := dns1123_subdomain_error(node_name)) is not None:
                r.error(child(path, "name"), f"node name {why}")
                break
            if node_name in names:
                r.error(child(path, "name"), f"node {node_name!r} is defined twice")
            names.add(node_name)
            meta = o.ObjectMeta(name=node_name, namespace="", labels={**labels, "kubernetes.io/hostname": node_name})
            nodes.append(o.Node(meta, allocatable=dict(alloc), taints=tuple(taints)))
    queues: list[o.Queue] = []
    seen_queues: dict[str, str] = {}
    for path, raw in r.items(top, "queues", ""):
        if not isinstance(raw, Mapping):
            r.error(path, f"must be a Queue manifest, not {describe(raw)}")
            continue
        try:
            q = parse_queue(raw, source)
        except ValidationError as e:
            r.errors.extend(FieldError(child(path, err.path), err.rule) for err in e.errors)
            continue
        r.errors.extend(FieldError(child(path, err.path), err.rule) for err in validate_queue(q))
        if q.name in seen_queues:
            r.error(child(path, "metadata.name"), f"queue {q.name!r} is defined twice (also {seen_queues[q.name]})")
            continue
        seen_queues[q.name] = path
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


def _arrival(r: FieldReader, raw: object, path: str) -> JobArrival | None:
    spec = r.mapping(raw, path)
    if spec is None:
        if raw is None:
            r.error(path, "must be a job, not null")
        return None
    r.known(spec, path, ("submitTime", "duration", "durations", "exitCode", "exitCodes", "manifest"))
    if not r.required(spec, "manifest", path):
        return None
    manifest = spec["manifest"]
    where = child(path, "manifest")
    if not isinstance(manifest, Mapping):
        r.error(where, f"must be a Volcano Job manifest, not {describe(manifest)}")
        return None
    try:
        job = parse_job(manifest, "")
    except ValidationError as e:
        r.errors.extend(FieldError(child(where, err.path), err.rule) for err in e.errors)
        return None
    # parse_job has run validate_job: what it returns passed it.
    durations: dict[str, float | None] = {}
    dmap = r.sub(spec, "durations", path) or {}
    for task, value in dmap.items():
        durations[task] = None if value is None else _number(r, dmap, task, child(path, "durations"))
    codes: dict[str, int] = {}
    cmap = r.sub(spec, "exitCodes", path) or {}
    for task in cmap:
        code = r.integer(cmap, task, child(path, "exitCodes"))
        if code is not None:
            codes[task] = code
    for key, tasks in (("durations", durations), ("exitCodes", codes)):
        for task in tasks:
            if job.spec.task(task) is None:
                r.error(child(child(path, key), task), f"job {job.name} has no task {task!r}")
    return JobArrival(
        submit_time=_number(r, spec, "submitTime", path) or 0.0,
        job=job,
        duration=_number(r, spec, "duration", path),
        durations=durations,
        exit_code=r.integer(spec, "exitCode", path) or 0,
        exit_codes=codes,
        valid=True,
    )


def parse_workload(doc: object, source: str) -> Workload:
    r = FieldReader()
    top = _top(r, doc, source, ("jobs", "faults", "commands"))
    jobs: list[JobArrival] = []
    seen: dict[str, str] = {}
    for path, raw in r.items(top, "jobs", ""):
        arrival = _arrival(r, raw, path)
        if arrival is None:
            continue
        key = arrival.job.key
        if key in seen:
            r.error(child(path, "manifest.metadata.name"), f"job {key} is submitted twice (also {seen[key]})")
            continue
        seen[key] = path
        jobs.append(arrival)
    refs = _References(jobs)
    faults = [f for path, raw in r.items(top, "faults", "") if (f := _fault(r, raw, path, refs)) is not None]
    commands = [c for path, raw in r.items(top, "commands", "") if (c := _command(r, raw, path, refs)) is not None]
    r.raise_if_errors(source)
    return Workload(tuple(jobs), tuple(faults), tuple(commands))


class _References:
    """The jobs and pods a workload can have, to resolve the names faults and commands use.

    A name alone means the one job (or pod) of that name in any namespace;
    `namespace/name` is exact."""

    def __init__(self, jobs: list[JobArrival]) -> None:
        self.jobs: dict[str, list[str]] = {}
        self.pods: dict[str, list[str]] = {}
        for a in jobs:
            job = a.job
            self.jobs.setdefault(job.name, []).append(job.key)
            for task in job.spec.tasks:
                for i in range(task.replicas):
                    name = pod_name(job.name, task.name, i)
                    self.pods.setdefault(name, []).append(f"{job.namespace}/{name}")

    @staticmethod
    def _resolve(names: dict[str, list[str]], given: str, what: str) -> tuple[str | None, str]:
        if "/" in given:
            ns, _, name = given.partition("/")
            found = [k for k in names.get(name, []) if k == f"{ns}/{name}"]
        else:
            found = names.get(given, [])
        if not found:
            return None, f"no {what} of the workload is named {given!r}"
        if len(found) > 1:
            return None, f"{given!r} names {len(found)} {what}s ({', '.join(found)}): write namespace/name"
        return found[0], ""

    def job(self, given: str) -> tuple[str | None, str]:
        return self._resolve(self.jobs, given, "job")

    def pod(self, given: str) -> tuple[str | None, str]:
        return self._resolve(self.pods, given, "pod")


def _fault(r: FieldReader, raw: object, path: str, refs: _References) -> Fault | None:
    spec = r.mapping(raw, path)
    if spec is None:
        if raw is None:
            r.error(path, "must be a fault, not null")
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
    key, why = refs.pod(pod)
    if key is None:
        r.error(child(path, "pod"), why)
        return None
    return Fault(time, pod=key, exit_code=code, evict=evict)


def _command(r: FieldReader, raw: object, path: str, refs: _References) -> Command | None:
    spec = r.mapping(raw, path)
    if spec is None:
        r.error(path, f"must be a command {{time, job, action}}, not {describe(raw)}")
        return None
    r.known(spec, path, ("time", "job", "action"))
    present = [r.required(spec, key, path) for key in ("time", "job", "action")]
    if not all(present):
        return None
    time = _number(r, spec, "time", path)
    action = r.choice(spec, "action", path, COMMAND_ACTIONS, "")
    if time is None or not action:
        return None
    key, why = refs.job(r.string(spec, "job", path))
    if key is None:
        r.error(child(path, "job"), why)
        return None
    return Command(time, key, action)


# Kubernetes creates these two itself; every other class must be declared in CLUSTER.yaml.
BUILTIN_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def check_references(cluster: Cluster, workload: Workload, source: str) -> None:
    """What a workload names in the cluster exists: the nodes of node faults and the jobs' PriorityClasses.

    Kubernetes refuses a pod whose PriorityClass does not exist, so such a job could never run."""
    nodes = {n.name for n in cluster.nodes}
    classes = {pc.name for pc in cluster.priority_classes} | BUILTIN_PRIORITY_CLASSES
    errors: list[FieldError] = []
    for i, arrival in enumerate(workload.jobs):
        spec = arrival.job.spec
        names = [spec.priority_class_name, *(task.template.spec.priority_class_name for task in spec.tasks)]
        if all(not name or name in classes for name in names):
            continue  # the paths are spelled out only for an error
        where = child(item("jobs", i), "manifest.spec")
        named = [(child(where, "priorityClassName"), spec.priority_class_name)]
        named += [
            (
                child(item(child(where, "tasks"), t), "template.spec.priorityClassName"),
                task.template.spec.priority_class_name,
            )
            for t, task in enumerate(spec.tasks)
        ]
        errors.extend(
            FieldError(path, f"the cluster has no PriorityClass {name!r} (declare it under priorityClasses)")
            for path, name in named
            if name and name not in classes
        )
    errors.extend(
        FieldError(child(item("faults", i), "node"), f"the cluster has no node {f.node!r}")
        for i, f in enumerate(workload.faults)
        if f.node and f.node not in nodes
    )
    if errors:
        raise ValidationError(errors, source)


def load(cluster_path: str, workload_path: str) -> tuple[Cluster, Workload]:
    cluster = parse_cluster(read_yaml(cluster_path), cluster_path)
    workload = parse_workload(read_yaml(workload_path), workload_path)
    check_references(cluster, workload, workload_path)
    return cluster, workload
