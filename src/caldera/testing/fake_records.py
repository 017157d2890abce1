"""The jobs and pods of the fake cluster (`fake_cluster.py`), with the summaries the daemon's API gives."""

from __future__ import annotations

from dataclasses import dataclass, field

from caldera.core import objects as o
from caldera.core.jobkind import applied_as, job_type
from caldera.system.api import JSON


@dataclass(slots=True)
class FakePod:
    name: str
    task: str
    index: int
    node: str | None = None
    phase: str = o.POD_PENDING
    exit_code: int | None = None
    restarts: int = 0
    address: str | None = None
    reason: str = ""
    message: str = ""

    def summary(self) -> JSON:
        return {
            "name": self.name,
            "task": self.task,
            "index": self.index,
            "node": self.node,
            "phase": self.phase,
            "exitCode": self.exit_code,
            "restarts": self.restarts,
            "address": self.address,
            "reason": self.reason,
            "message": self.message,
        }


@dataclass(slots=True)
class FakeJob:
    manifest: JSON
    namespace: str
    name: str
    queue: str
    min_available: int
    created: float
    pods: dict[str, FakePod] = field(default_factory=dict)
    phase: str = o.PENDING
    retry_count: int = 0
    start: float | None = None
    completion: float | None = None
    reason: str = ""
    message: str = ""
    waiting: JSON | None = None

    def summary(self) -> JSON:
        meta = self.manifest.get("metadata") or {}
        api_version, kind = applied_as(meta.get("annotations"))
        return {
            "name": self.name,
            "namespace": self.namespace,
            "apiVersion": api_version,
            "kind": kind,
            "type": job_type(meta.get("labels")),
            "labels": dict(meta.get("labels") or {}),
            "queue": self.queue,
            "phase": self.phase,
            "retryCount": self.retry_count,
            "minAvailable": self.min_available,
            "creationTimestamp": self.created,
            "startTime": self.start,
            "completionTime": self.completion,
            "reason": self.reason,
            "message": self.message,
            "waiting": self.waiting,
            "pods": [p.summary() for p in self.pods.values()],
        }

    def object(self) -> JSON:
        meta = {**self.manifest.get("metadata", {}), "namespace": self.namespace, "creationTimestamp": self.created}
        status = {"state": {"phase": self.phase, "reason": self.reason, "message": self.message}}
        return {**self.manifest, "metadata": meta, "status": {**status, "retryCount": self.retry_count}}
