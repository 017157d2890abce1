"""What a pod asks for and runs: the pod template of a task (containers, resources, placement rules).

Frozen dataclasses in the Kubernetes shape; `PodSpec.requests()` is what a pod asks of a
node. Re-exported by `caldera.core.objects`, where the objects that use them live.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


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
