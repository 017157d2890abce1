"""task-topology: co-locate the tasks of a job that talk most, spread the ones that compete.

Reads Volcano's job annotations:
`volcano.sh/task-topology-affinity: "ps,worker;..."` (groups to co-locate),
`volcano.sh/task-topology-anti-affinity: "ps"` (groups to spread),
`volcano.sh/task-topology-task-order: "ps,worker"` (which task to place first).
A node scores +100 × weight per already placed task of the job it should share a
node with, and −100 × weight per one it should avoid.
"""

from __future__ import annotations

import numpy as np

from caldera.scheduler.framework import Indices, Plugin, Scores
from caldera.scheduler.state import OCCUPYING, JobInfo, TaskInfo, TaskStatus

AFFINITY = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER = "volcano.sh/task-topology-task-order"


def groups(job: JobInfo, key: str) -> list[set[str]]:
    text = job.annotations.get(key, "")
    return [{t.strip() for t in g.split(",") if t.strip()} for g in text.split(";") if g.strip()]


class TaskTopology(Plugin):
    name = "task-topology"

    def task_order(self, task: TaskInfo) -> tuple[object, ...]:
        order = [t.strip() for t in task.job.annotations.get(TASK_ORDER, "").split(",") if t.strip()]
        return (order.index(task.task) if task.task in order else len(order),)

    def node_order(self, task: TaskInfo, nodes: Indices) -> Scores | None:
        job = task.job
        near = set().union(*[g for g in groups(job, AFFINITY) if task.task in g])
        far = set().union(*[g for g in groups(job, ANTI_AFFINITY) if task.task in g])
        if not near and not far:
            return None
        weight = self.arg_float("task-topology.weight", 1.0)
        n = len(self.ssn.state.node_names)
        pull = np.zeros(n)
        for t in job.tasks.values():
            if t is task or t.node < 0 or not (t.status in OCCUPYING or t.status is TaskStatus.PIPELINED):
                continue
            if t.task in near:
                pull[t.node] += 1.0
            if t.task in far:
                pull[t.node] -= 1.0
        scores: Scores = pull[nodes] * 100.0 * weight
        return scores
