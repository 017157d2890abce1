"""Keyword-only builders of simulator inputs (as the YAML documents users write) and a report reader.

A test builds CLUSTER and WORKLOAD documents as dicts, runs them through the same
parsing and simulation `caldera simulate` uses, and asserts on the JSON report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from caldera.scheduler.config import SchedulerConfig
from caldera.scheduler.scheduler import Scheduler
from caldera.sim.engine import Simulation
from caldera.sim.inputs import check_references, parse_cluster, parse_workload
from caldera.sim.report import build

Doc = dict[str, Any]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def cluster(*, nodes: int = 4, gpus: int = 2, queues: Sequence[Doc] = (), **extra: Any) -> Doc:
    """`nodes` nodes n-0.. with `gpus` GPUs, 16 CPUs and 64Gi each."""
    alloc = {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": str(gpus), "pods": "110"}
    doc: Doc = {"nodes": [{"name": "n", "count": nodes, "allocatable": alloc}], **extra}
    if queues:
        doc["queues"] = list(queues)
    return doc


def queue(name: str, **spec: Any) -> Doc:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def task(
    name: str = "worker",
    *,
    replicas: int = 2,
    gpus: int = 1,
    restart_policy: str = "Never",
    policies: Sequence[Doc] = (),
    **extra: Any,
) -> Doc:
    container = {"name": name, "image": "busybox", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)}}}
    doc: Doc = {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"restartPolicy": restart_policy, "containers": [container]}},
        **extra,
    }
    if policies:
        doc["policies"] = list(policies)
    return doc


def manifest(
    name: str = "job", *, tasks: Sequence[Doc] | None = None, policies: Sequence[Doc] = (), **spec: Any
) -> Doc:
    """A Volcano Job manifest; `spec` takes the Job's camelCase fields (minAvailable=..., maxRetry=...)."""
    body: Doc = {"tasks": list(tasks) if tasks is not None else [task()], **spec}
    if policies:
        body["policies"] = list(policies)
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}, "spec": body}


def policy(action: str, event: str | None = None, *, exit_code: int | None = None, timeout: str | None = None) -> Doc:
    doc: Doc = {"action": action}
    if event is not None:
        doc["event"] = event
    if exit_code is not None:
        doc["exitCode"] = exit_code
    if timeout is not None:
        doc["timeout"] = timeout
    return doc


def job(manifest_doc: Doc, *, submit: float = 0, duration: float | None = 600, **extra: Any) -> Doc:
    return {"submitTime": submit, "duration": duration, "manifest": manifest_doc, **extra}


def workload(*jobs: Doc, faults: Sequence[Doc] = (), commands: Sequence[Doc] = ()) -> Doc:
    doc: Doc = {"jobs": list(jobs)}
    if faults:
        doc["faults"] = list(faults)
    if commands:
        doc["commands"] = list(commands)
    return doc


def fixture_manifest(name: str) -> Doc:
    doc = yaml.safe_load((FIXTURES / name).read_text())
    assert isinstance(doc, dict)
    return doc


@dataclass(frozen=True)
class Report:
    """The `-o json` document, with lookups tests need."""

    doc: Mapping[str, Any]

    def job(self, name: str) -> Mapping[str, Any]:
        found: list[Mapping[str, Any]] = [j for j in self.doc["jobs"] if j["name"] == name]
        (only,) = found
        return only

    def attempts(self, pod: str) -> list[Mapping[str, Any]]:
        """The pod's attempts, in attempt order."""
        return sorted((p for p in self.doc["pods"] if p["name"] == pod), key=lambda p: p["attempt"])

    def pods_of(self, job: str) -> list[Mapping[str, Any]]:
        return [p for p in self.doc["pods"] if p["job"] == job]

    def events(self, kind: str | None = None, obj: str | None = None) -> list[Mapping[str, Any]]:
        return [e for e in self.doc["events"] if kind in (None, e["kind"]) and obj in (None, e["object"])]

    def phases(self, job: str) -> list[tuple[float, str]]:
        """The job's phases in order, with the time each was entered."""
        return [(e["time"], e["reason"]) for e in self.events("JobPhase", job)]


def simulate(
    cluster_doc: Doc, workload_doc: Doc, *, until: float | None = None, config: SchedulerConfig | None = None
) -> Report:
    """As `caldera simulate` runs it, with the built-in configuration unless `config` is given."""
    parsed_cluster = parse_cluster(cluster_doc, "CLUSTER.yaml")
    parsed_workload = parse_workload(workload_doc, "WORKLOAD.yaml")
    check_references(parsed_cluster, parsed_workload, "WORKLOAD.yaml")  # as `caldera simulate` does
    sim = Simulation(parsed_cluster, parsed_workload, Scheduler(config), until=until)
    sim.run()
    return Report(build(sim))
