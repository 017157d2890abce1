"""Object metadata in the Kubernetes shape (name, namespace, uid, resourceVersion, labels, annotations)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
