"""The scheduling API's objects (scheduling.volcano.sh): Queue and PodGroup, with their states and phases.

Imported through `caldera.core.objects`, with the rest of the object model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from caldera.core.meta import ObjectMeta
from caldera.core.resources import format_resource_list
from caldera.utils.records import immutable

SCHEDULING_API = "scheduling.volcano.sh/v1beta1"

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


@immutable
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
