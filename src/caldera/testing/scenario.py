"""Declarative scheduler scenarios: build a cluster and a workload, simulate, query the report.

The builders return the plain dicts `caldera simulate` reads from CLUSTER.yaml and
WORKLOAD.yaml, and `run_scenario` goes through the same parsing and the same
report as the CLI, so a scenario checks exactly what a user would see:

    report = run_scenario(
        cluster=cluster(nodes=[gpu_nodes(count=2, gpus=2)]),
        workload=workload(arrival(vcjob("a", tasks=[task(replicas=4)], min_available=4))),
    )
    assert job_phase(report, "a") == "Completed"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from caldera.scheduler.config import default_config, parse_config
from caldera.scheduler.scheduler import Scheduler
from caldera.sim import report as sim_report
from caldera.sim.engine import Simulation
from caldera.sim.inputs import parse_cluster, parse_workload

Doc = dict[str, Any]
Report = dict[str, Any]

# ---------------------------------------------------------------- cluster


def gpu_nodes(
    *,
    name: str = "gpu",
    count: int = 2,
    gpus: int = 2,
    cpu: str = "16",
    memory: str = "64Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
) -> Doc:
    """A class of identical nodes (named `name-0`, `name-1`, ... when count > 1)."""
    alloc: Doc = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    node: Doc = {"name": name, "count": count, "allocatable": alloc}
    if labels:
        node["labels"] = dict(labels)
    if taints:
        node["taints"] = [dict(t) for t in taints]
    return node


def queue(
    name: str,
    *,
    weight: int | None = None,
    capability: Mapping[str, str] | None = None,
    guarantee: Mapping[str, str] | None = None,
    deserved: Mapping[str, str] | None = None,
    reclaimable: bool | None = None,
    priority: int | None = None,
    state: str | None = None,
) -> Doc:
    """A Volcano Queue manifest."""
    spec: Doc = {}
    if weight is not None:
        spec["weight"] = weight
    if capability is not None:
        spec["capability"] = dict(capability)
    if guarantee is not None:
        spec["guarantee"] = {"resource": dict(guarantee)}
    if deserved is not None:
        spec["deserved"] = dict(deserved)
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    if priority is not None:
        spec["priority"] = priority
    doc: Doc = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}}
    doc["spec"] = spec
    if state is not None:
        doc["status"] = {"state": state}
    return doc


def cluster(
    *, nodes: Sequence[Doc], queues: Sequence[Doc] = (), priority_classes: Mapping[str, int] | None = None
) -> Doc:
    doc: Doc = {"nodes": list(nodes)}
    if queues:
        doc["queues"] = list(queues)
    if priority_classes:
        doc["priorityClasses"] = [{"name": n, "value": v} for n, v in priority_classes.items()]
    return doc


# ---------------------------------------------------------------- workload


def task(
    name: str = "worker",
    *,
    replicas: int = 1,
    gpus: int = 1,
    cpu: str | None = "1",
    memory: str | None = "4Gi",
    min_available: int | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: Sequence[Mapping[str, str]] = (),
    priority_class: str = "",
    restart_policy: str = "OnFailure",
    policies: Sequence[Mapping[str, Any]] = (),
) -> Doc:
    """One task of a Volcano Job: `replicas` pods of one container asking for cpu, memory and GPUs.

    `cpu=None, memory=None, gpus=0` is a BestEffort pod: no requests at all."""
    requests: Doc = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    container: Doc = {"name": name, "image": "busybox"}
    if requests:
        container["resources"] = {"requests": requests}
    spec: Doc = {"restartPolicy": restart_policy, "containers": [container]}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = dict(affinity)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if priority_class:
        spec["priorityClassName"] = priority_class
    doc: Doc = {"name": name, "replicas": replicas, "template": {"spec": spec}}
    if min_available is not None:
        doc["minAvailable"] = min_available
    if policies:
        doc["policies"] = [dict(p) for p in policies]
    return doc


def vcjob(
    name: str,
    *,
    tasks: Sequence[Doc] | None = None,
    min_available: int | None = None,
    queue: str | None = None,
    priority_class: str | None = None,
    annotations: Mapping[str, str] | None = None,
    policies: Sequence[Mapping[str, Any]] = (),
    max_retry: int | None = None,
) -> Doc:
    """A `batch.volcano.sh/v1alpha1` Job manifest (default: one 1-GPU worker)."""
    spec: Doc = {"schedulerName": "volcano", "tasks": list(tasks) if tasks is not None else [task()]}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if queue is not None:
        spec["queue"] = queue
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if policies:
        spec["policies"] = [dict(p) for p in policies]
    if max_retry is not None:
        spec["maxRetry"] = max_retry
    meta: Doc = {"name": name}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": meta, "spec": spec}


def arrival(
    job: Doc,
    *,
    at: float = 0,
    duration: float | None = 600,
    durations: Mapping[str, float | None] | None = None,
    exit_code: int | None = None,
) -> Doc:
    """A job submitted at `at` whose pods each run `duration` seconds (None: until killed)."""
    doc: Doc = {"submitTime": at, "manifest": job}
    if duration is not None:
        doc["duration"] = duration
    if durations:
        doc["durations"] = dict(durations)
    if exit_code is not None:
        doc["exitCode"] = exit_code
    return doc


def workload(*arrivals: Doc, faults: Sequence[Mapping[str, Any]] = ()) -> Doc:
    doc: Doc = {"jobs": list(arrivals)}
    if faults:
        doc["faults"] = [dict(f) for f in faults]
    return doc


def scheduler_config(*, actions: str, tiers: Sequence[Sequence[str | Mapping[str, Any]]]) -> Doc:
    """A Volcano scheduler conf; a plugin is its name or a full `{name, arguments, enable...}` entry."""
    return {
        "actions": actions,
        "tiers": [{"plugins": [{"name": p} if isinstance(p, str) else dict(p) for p in tier]} for tier in tiers],
    }


# ---------------------------------------------------------------- running


def run_scenario(*, cluster: Doc, workload: Doc, config: Doc | str | None = None, until: float | None = None) -> Report:
    """Simulate as `caldera simulate -o json` does and return the report (a conf may be a dict or YAML text)."""
    # Everything goes through YAML text, so the inputs are exactly what files would hold.
    if config is None:
        conf = default_config()
    else:
        conf = parse_config(config if isinstance(config, str) else yaml.safe_dump(config), "<scenario config>")
    parsed_cluster = parse_cluster(yaml.safe_load(yaml.safe_dump(cluster)), "<scenario cluster>")
    parsed_workload = parse_workload(yaml.safe_load(yaml.safe_dump(workload)), "<scenario workload>")
    sim = Simulation(parsed_cluster, parsed_workload, Scheduler(conf), until=until)
    sim.run()
    return sim_report.build(sim)


# ---------------------------------------------------------------- queries


def job_row(report: Report, job: str) -> Doc:
    row = next((j for j in report["jobs"] if j["name"] == job), None)
    if row is None:
        raise KeyError(f"no job {job!r} in the report")
    return dict(row)


def job_phase(report: Report, job: str) -> str:
    return str(job_row(report, job)["phase"])


def start_time(report: Report, job: str) -> float | None:
    """When the job's minAvailable-th pod started (None: never)."""
    t = job_row(report, job)["startTime"]
    return None if t is None else float(t)


def pods_of(report: Report, job: str) -> list[Doc]:
    """Every attempt of every pod of `job`, pending ones included (node "")."""
    return [p for p in report["pods"] if p["job"] == job]


def events(report: Report, kind: str, *, obj: str | None = None) -> list[Doc]:
    return [e for e in report["events"] if e["kind"] == kind and (obj is None or e["object"] == obj)]


def _pod_job(report: Report) -> dict[str, str]:
    return {p["name"]: p["job"] for p in report["pods"]}


def binds(report: Report, job: str, *, at: float | None = None) -> list[Doc]:
    """The Bind events of `job`'s pods (only those at time `at` if given)."""
    owner = _pod_job(report)
    return [e for e in events(report, "Bind") if owner.get(e["object"]) == job and (at is None or e["time"] == at)]


EVICTION_KINDS = ("Evict", "Preempt", "Reclaim")


def evictions(report: Report, job: str | None = None, *, reason: str | None = None) -> list[Doc]:
    """The eviction events (of `job`'s pods; with `reason`, such as Preempt or Reclaim, if given)."""
    owner = _pod_job(report)
    return [
        e
        for e in report["events"]
        if e["kind"] in EVICTION_KINDS
        and (job is None or owner.get(e["object"]) == job)
        and (reason is None or e["reason"] == reason)
    ]


def running_at(report: Report, job: str, t: float) -> list[Doc]:
    """The attempts of `job`'s pods running at time `t` (started at or before, ending after)."""
    return [
        p
        for p in pods_of(report, job)
        if p["startTime"] is not None and p["startTime"] <= t and (p["endTime"] is None or p["endTime"] > t)
    ]


def nodes_of(report: Report, job: str, *, at: float | None = None) -> dict[str, str]:
    """Pod name → node for `job`'s attempts (those running at `at` if given)."""
    rows = pods_of(report, job) if at is None else running_at(report, job, at)
    return {p["name"]: p["node"] for p in rows if p["node"]}


def jobs_in_queue(report: Report, queue: str) -> list[str]:
    return [j["name"] for j in report["jobs"] if j["queue"] == queue]


def peak_running(report: Report, jobs: Sequence[str]) -> int:
    """The most pods of `jobs` ever running at the same time."""
    wanted = set(jobs)
    changes: list[tuple[float, int]] = []
    for p in report["pods"]:
        if p["job"] in wanted and p["startTime"] is not None:
            changes.append((p["startTime"], 1))
            if p["endTime"] is not None:
                changes.append((p["endTime"], -1))
    peak = running = 0
    for _, delta in sorted(changes):  # at equal times, ends (-1) come before starts
        running += delta
        peak = max(peak, running)
    return peak


def unschedulable_messages(report: Report, job: str) -> list[str]:
    """The messages of the job's Unschedulable events, in order."""
    return [str(e["message"]) for e in events(report, "Unschedulable", obj=job)]
