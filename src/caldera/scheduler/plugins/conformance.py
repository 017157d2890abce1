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
        return _evictable_of(candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return _evictable_of(candidates)


def _evictable_of(candidates: list[TaskInfo]) -> list[TaskInfo]:
    # Inline rather than a call per task: victim lists are long and filtered often.
    return [c for c in candidates if c.spec.priority_class_name not in CRITICAL and c.job.namespace != "kube-system"]
