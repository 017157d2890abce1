"""The cluster's own objects: Node, PriorityClass and Event (what `describe` and the simulator report).

Re-exported by `caldera.core.objects`, the object model's one import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from caldera.core.meta import ObjectMeta
from caldera.core.podspec import Taint
from caldera.core.resources import format_resource_list
from caldera.utils.records import immutable


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


@immutable
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
