"""The object model in the Kubernetes shape: Job, Queue, PodGroup, Pod, Node, PriorityClass, Event.

`*Spec` classes are what a user asked for and are frozen; `*Status` classes are
what was observed and change. Every object serialises to the dict a Kubernetes
API would show (`to_dict`), and manifests are read by `caldera.core.manifest`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from caldera.core.resources import format_resource_list

JOB_API = "batch.volcano.sh/v1alpha1"
SCHEDULING_API = "scheduling.volcano.sh/v1beta1"

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

# PodGroup phases.
PG_PENDING = "Pending"
PG_INQUEUE = "Inqueue"
PG_RUNNING = "Running"
PG_UNKNOWN = "Unknown"
PG_COMPLETED = "Completed"

# Queue states.
QUEUE_OPEN = "Open"
QUEUE_CLOSING = "Closing"
QUEUE_CLOSED = "Closed"

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


@dataclass(slots=True)
class ObjectMeta:
    name: str
    namespace: str = "default"
    uid: str = ""
    resource_version: int = 0
    creation_timestamp: float = 0.0
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    generation: int = 1

    def to_dict(self, namespaced: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if namespaced:
            out["namespace"] = self.namespace
        out["uid"] = self.uid
        out["resourceVersion"] = str(self.resource_version)
        out["creationTimestamp"] = self.creation_timestamp
        if self.labels:
            out["labels"] = dict(self.labels)
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        return out


# ---------------------------------------------------------------- pod template


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # "" matches every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"  # NoSchedule | PreferNoSchedule | NoExecute

    def to_dict(self) -> dict[str, str]:
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out


@dataclass(frozen=True, slots=True)
class SelectorRequirement:
    """A node selector requirement: `key` `operator` (In, NotIn, Exists, DoesNotExist, Gt, Lt) `values`."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        op = self.operator
        if op == "In":
            return present and value in self.values
        if op == "NotIn":
            return not present or value not in self.values
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if op in ("Gt", "Lt") and present and self.values:
            try:
                have, want = int(value), int(self.values[0])
            except ValueError:
                return False
            return have > want if op == "Gt" else have < want
        return False


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements that must all hold; terms of a node affinity are ORed."""

    match_expressions: tuple[SelectorRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.match_expressions)


@dataclass(frozen=True, slots=True)
class EnvVar:
    name: str
    value: str | None = None
    field_path: str | None = None  # valueFrom.fieldRef.fieldPath


@dataclass(frozen=True, slots=True)
class ContainerPort:
    container_port: int
    name: str = ""


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    image: str = ""
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[EnvVar, ...] = ()
    working_dir: str = ""
    requests: Mapping[str, float] = field(default_factory=dict)
    limits: Mapping[str, float] = field(default_factory=dict)
    ports: tuple[ContainerPort, ...] = ()


@dataclass(frozen=True, slots=True)
class PodSpec:
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    restart_policy: str = "Always"  # Always | OnFailure | Never
    node_selector: Mapping[str, str] = field(default_factory=dict)
    node_affinity: tuple[NodeSelectorTerm, ...] = ()  # required terms, ORed; empty: no constraint
    tolerations: tuple[Toleration, ...] = ()
    priority_class_name: str = ""
    scheduler_name: str = ""
    termination_grace_period_seconds: float = 30.0

    def requests(self) -> dict[str, float]:
        """What the pod asks of a node: the containers' sum, or the largest init container if larger."""
        out: dict[str, float] = {}
        for c in self.containers:
            for k, v in c.requests.items():
                out[k] = out.get(k, 0.0) + v
        for c in self.init_containers:
            for k, v in c.requests.items():
                out[k] = max(out.get(k, 0.0), v)
        return out


@dataclass(frozen=True, slots=True)
class PodTemplate:
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    spec: PodSpec = field(default_factory=PodSpec)
    raw: Mapping[str, Any] = field(default_factory=dict)  # the template as written, for the executors


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


@dataclass(frozen=True, slots=True)
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

    def to_dict(self) -> dict[str, Any]:
        return {
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


# ---------------------------------------------------------------- queue


@dataclass(frozen=True, slots=True)
class QueueSpec:
    weight: int = 1
    capability: Mapping[str, float] = field(default_factory=dict)  # hard cap; absent resource: no cap
    guarantee: Mapping[str, float] = field(default_factory=dict)  # reserved, never lent
    deserved: Mapping[str, float] = field(default_factory=dict)  # for the capacity plugin
    reclaimable: bool = True
    parent: str = ""
    priority: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"weight": self.weight, "reclaimable": self.reclaimable}
        if self.capability:
            out["capability"] = format_resource_list(self.capability)
        if self.guarantee:
            out["guarantee"] = {"resource": format_resource_list(self.guarantee)}
        if self.deserved:
            out["deserved"] = format_resource_list(self.deserved)
        if self.parent:
            out["parent"] = self.parent
        if self.priority:
            out["priority"] = self.priority
        return out


@dataclass(slots=True)
class Queue:
    metadata: ObjectMeta
    spec: QueueSpec = field(default_factory=QueueSpec)
    state: str = QUEUE_OPEN
    api_version: str = SCHEDULING_API
    kind: str = "Queue"

    @property
    def name(self) -> str:
        return self.metadata.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": self.metadata.to_dict(namespaced=False),
            "spec": self.spec.to_dict(),
            "status": {"state": self.state},
        }


# ---------------------------------------------------------------- podgroup


@dataclass(frozen=True, slots=True)
class PodGroupCondition:
    type: str  # Unschedulable | Scheduled
    status: str  # "True" | "False"
    reason: str = ""
    message: str = ""
    last_transition_time: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": self.last_transition_time,
        }


@dataclass(slots=True)
class PodGroup:
    """One per job, named `<job>-<uid>`: the scheduler's unit of gang admission."""

    metadata: ObjectMeta
    job: str  # the job's name (same namespace)
    min_member: int
    queue: str = "default"
    priority_class_name: str = ""
    min_task_member: dict[str, int] = field(default_factory=dict)
    min_resources: dict[str, float] = field(default_factory=dict)
    phase: str = PG_PENDING
    conditions: list[PodGroupCondition] = field(default_factory=list)
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    api_version: str = SCHEDULING_API
    kind: str = "PodGroup"

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": self.metadata.to_dict(),
            "spec": {
                "minMember": self.min_member,
                "minTaskMember": dict(self.min_task_member),
                "queue": self.queue,
                "priorityClassName": self.priority_class_name,
                "minResources": format_resource_list(self.min_resources),
            },
            "status": {
                "phase": self.phase,
                "conditions": [c.to_dict() for c in self.conditions],
                "running": self.running,
                "succeeded": self.succeeded,
                "failed": self.failed,
            },
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


# ---------------------------------------------------------------- node, priority class, event


@dataclass(slots=True)
class Node:
    metadata: ObjectMeta
    allocatable: dict[str, float]
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    virtual_resources: frozenset[str] = frozenset()  # e.g. {"nvidia.com/gpu"} when declared, not detected
    api_version: str = "v1"
    kind: str = "Node"

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": self.metadata.to_dict(namespaced=False),
            "spec": {"taints": [t.to_dict() for t in self.taints], "unschedulable": self.unschedulable},
            "status": {"allocatable": format_resource_list(self.allocatable), "ready": self.ready},
        }


@dataclass(frozen=True, slots=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"  # or Never

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": self.name},
            "value": self.value,
            "globalDefault": self.global_default,
            "preemptionPolicy": self.preemption_policy,
        }


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened to an object, as `caldera describe` and the simulator report it."""

    time: float
    kind: str  # Bind, Evict, Preempt, Reclaim, JobPhase, PodPhase, PodGroupPhase, Unschedulable, ...
    object: str  # the object's name (a pod, a job or a podgroup)
    node: str = ""
    reason: str = ""
    message: str = ""
    namespace: str = "default"

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "kind": self.kind,
            "object": self.object,
            "node": self.node,
            "reason": self.reason,
            "message": self.message,
        }
