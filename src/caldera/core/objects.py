"""The object model in the Kubernetes shape: Job, Queue, PodGroup, Pod, Node, PriorityClass, Event.

`*Spec` classes are what a user asked for and are frozen; `*Status` classes are
what was observed and change. Every object serialises to the dict a Kubernetes
API would show (`to_dict`), and manifests are read by `caldera.core.manifest`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The object model is imported from here; its parts live in their own modules.
from caldera.core.cluster import Event as Event
from caldera.core.cluster import Node as Node
from caldera.core.cluster import PriorityClass as PriorityClass
from caldera.core.meta import ObjectMeta as ObjectMeta
from caldera.core.podspec import Container as Container
from caldera.core.podspec import ContainerPort as ContainerPort
from caldera.core.podspec import EnvVar as EnvVar
from caldera.core.podspec import NodeSelectorTerm as NodeSelectorTerm
from caldera.core.podspec import PodSpec as PodSpec
from caldera.core.podspec import PodTemplate as PodTemplate
from caldera.core.podspec import SelectorRequirement as SelectorRequirement
from caldera.core.podspec import Taint as Taint
from caldera.core.podspec import Toleration as Toleration
from caldera.core.resources import format_resource_list
from caldera.core.scheduling import PG_COMPLETED as PG_COMPLETED
from caldera.core.scheduling import PG_INQUEUE as PG_INQUEUE
from caldera.core.scheduling import PG_PENDING as PG_PENDING
from caldera.core.scheduling import PG_RUNNING as PG_RUNNING
from caldera.core.scheduling import PG_UNKNOWN as PG_UNKNOWN
from caldera.core.scheduling import QUEUE_CLOSED as QUEUE_CLOSED
from caldera.core.scheduling import QUEUE_CLOSING as QUEUE_CLOSING
from caldera.core.scheduling import QUEUE_OPEN as QUEUE_OPEN
from caldera.core.scheduling import SCHEDULING_API as SCHEDULING_API
from caldera.core.scheduling import PodGroup as PodGroup
from caldera.core.scheduling import PodGroupCondition as PodGroupCondition
from caldera.core.scheduling import Queue as Queue
from caldera.core.scheduling import QueueSpec as QueueSpec
from caldera.utils.records import immutable

JOB_API = "batch.volcano.sh/v1alpha1"

# Job phases (Volcano's JobPhase).
PENDING = "Pending"
ABORTING = "Aborting"
ABORTED = "Aborted"
RUNNING = "Running"
RESTARTING = "Restarting"
COMPLETING = "Completing"
COMPLETED = "Completed"
TERMINATING = "Terminating"
TERMINATED = "Terminated"
FAILED = "Failed"
JOB_PHASES = (PENDING, ABORTING, ABORTED, RUNNING, RESTARTING, COMPLETING, COMPLETED, TERMINATING, TERMINATED, FAILED)
FINISHED_JOB_PHASES = frozenset({COMPLETED, TERMINATED, FAILED})

# Pod phases.
POD_PENDING = "Pending"
POD_RUNNING = "Running"
POD_SUCCEEDED = "Succeeded"
POD_FAILED = "Failed"
POD_UNKNOWN = "Unknown"

# Labels and annotations Volcano puts on pods.
JOB_NAME_KEY = "volcano.sh/job-name"
JOB_NAMESPACE_KEY = "volcano.sh/job-namespace"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_INDEX_KEY = "volcano.sh/task-index"
QUEUE_NAME_KEY = "volcano.sh/queue-name"
JOB_VERSION_KEY = "volcano.sh/job-version"
JOB_RETRY_COUNT_KEY = "volcano.sh/job-retry-count"
GROUP_NAME_KEY = "scheduling.k8s.io/group-name"
PREEMPTABLE_KEY = "volcano.sh/preemptable"


# ---------------------------------------------------------------- job


@dataclass(frozen=True, slots=True)
class LifecyclePolicy:
    """`events` (or one `exit_code`) → `action`, after `timeout` seconds when set."""

    action: str
    events: tuple[str, ...] = ()
    exit_code: int | None = None
    timeout: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action}
        if len(self.events) == 1:
            out["event"] = self.events[0]
        elif self.events:
            out["events"] = list(self.events)
        if self.exit_code is not None:
            out["exitCode"] = self.exit_code
        if self.timeout is not None:
            out["timeout"] = f"{self.timeout:g}s"
        return out


@dataclass(frozen=True, slots=True)
class TaskSpec:
    name: str
    replicas: int
    template: PodTemplate
    min_available: int | None = None  # None: all replicas
    policies: tuple[LifecyclePolicy, ...] = ()
    max_retry: int = 3
    depends_on: tuple[str, ...] = ()

    @property
    def min_members(self) -> int:
        return self.replicas if self.min_available is None else self.min_available

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "replicas": self.replicas}
        if self.min_available is not None:
            out["minAvailable"] = self.min_available
        if self.policies:
            out["policies"] = [p.to_dict() for p in self.policies]
        out["maxRetry"] = self.max_retry
        if self.depends_on:
            out["dependsOn"] = {"name": list(self.depends_on)}
        out["template"] = dict(self.template.raw)
        return out


@immutable
class JobSpec:
    tasks: tuple[TaskSpec, ...]
    min_available: int
    queue: str = "default"
    scheduler_name: str = "volcano"
    policies: tuple[LifecyclePolicy, ...] = ()
    plugins: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    max_retry: int = 3
    ttl_seconds_after_finished: int | None = None
    priority_class_name: str = ""
    min_success: int | None = None

    @property
    def total_replicas(self) -> int:
        return sum(t.replicas for t in self.tasks)

    def task(self, name: str) -> TaskSpec | None:
        for t in self.tasks:
            if t.name == name:
                return t
        return None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schedulerName": self.scheduler_name,
            "minAvailable": self.min_available,
            "queue": self.queue,
            "maxRetry": self.max_retry,
            "tasks": [t.to_dict() for t in self.tasks],
        }
        if self.policies:
            out["policies"] = [p.to_dict() for p in self.policies]
        if self.plugins:
            out["plugins"] = {k: list(v) for k, v in self.plugins.items()}
        if self.ttl_seconds_after_finished is not None:
            out["ttlSecondsAfterFinished"] = self.ttl_seconds_after_finished
        if self.priority_class_name:
            out["priorityClassName"] = self.priority_class_name
        if self.min_success is not None:
            out["minSuccess"] = self.min_success
        return out


@dataclass(slots=True)
class JobStatus:
    phase: str = PENDING
    reason: str = ""
    message: str = ""
    last_transition_time: float = 0.0
    retry_count: int = 0
    version: int = 0
    min_available: int = 0
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    start_time: float | None = None  # when the minAvailable-th pod first ran
    completion_time: float | None = None
    conditions: list[tuple[str, float]] = field(default_factory=list)  # (phase, time)
    pod_retries: dict[str, int] = field(default_factory=dict)  # elastic pods re-created in place, by pod name

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "state": {
                "phase": self.phase,
                "reason": self.reason,
                "message": self.message,
                "lastTransitionTime": self.last_transition_time,
            },
            "minAvailable": self.min_available,
            "pending": self.pending,
            "running": self.running,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "terminating": self.terminating,
            "unknown": self.unknown,
            "version": self.version,
            "retryCount": self.retry_count,
            "conditions": [{"status": p, "lastTransitionTime": t} for p, t in self.conditions],
        }
        if self.pod_retries:
            out["podRetries"] = dict(sorted(self.pod_retries.items()))
        return out


@dataclass(slots=True)
class Job:
    metadata: ObjectMeta
    spec: JobSpec
    status: JobStatus = field(default_factory=JobStatus)
    api_version: str = JOB_API
    kind: str = "Job"

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": self.metadata.to_dict(),
            "spec": self.spec.to_dict(),
            "status": self.status.to_dict(),
        }


# ---------------------------------------------------------------- pod


@dataclass(slots=True)
class PodStatus:
    phase: str = POD_PENDING
    reason: str = ""
    message: str = ""
    exit_code: int | None = None
    start_time: float | None = None
    finish_time: float | None = None
    restart_count: int = 0
    pod_ip: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "reason": self.reason,
            "message": self.message,
            "exitCode": self.exit_code,
            "startTime": self.start_time,
            "finishTime": self.finish_time,
            "restartCount": self.restart_count,
            "podIP": self.pod_ip,
        }


@dataclass(slots=True)
class Pod:
    metadata: ObjectMeta
    spec: PodSpec
    job: str = ""  # owning job's name, "" for a bare pod
    task: str = ""
    index: int = 0
    node_name: str = ""
    priority: int = 0  # resolved from the PriorityClass when created
    deletion_timestamp: float | None = None  # set when asked to stop; the pod is Terminating until it ends
    status: PodStatus = field(default_factory=PodStatus)
    api_version: str = "v1"
    kind: str = "Pod"

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @property
    def job_key(self) -> str:
        return f"{self.metadata.namespace}/{self.job}"

    @property
    def finished(self) -> bool:
        return self.status.phase in (POD_SUCCEEDED, POD_FAILED)

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": self.metadata.to_dict(),
            "spec": {
                "nodeName": self.node_name,
                "priority": self.priority,
                "priorityClassName": self.spec.priority_class_name,
                "restartPolicy": self.spec.restart_policy,
                "resources": format_resource_list(self.spec.requests()),
            },
            "status": self.status.to_dict(),
        }
