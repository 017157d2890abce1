"""conformance: never evict critical system pods."""

from __future__ import annotations

from caldera.scheduler.framework import Plugin
from caldera.scheduler.state import TaskInfo

CRITICAL = frozenset({"system-cluster-critical", "system-node-critical"})


def _evictable(task: TaskInfo) -> bool:
    return task.spec.priority_class_name not in CRITICAL and task.job.namespace != "kube-system"


class Conformance(Plugin):
    name = "conformance"

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return [c for c in candidates if _evictable(c)]

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return [c for c in candidates if _evictable(c)]
