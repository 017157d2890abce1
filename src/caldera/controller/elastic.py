"""The controller's part of elastic jobs: which pods a scaled task keeps, and pod-level recovery.

An elastic task (`caldera.core.elastic`) keeps `replicas` pods whose indices need not
be 0..replicas−1: scaling in removes the highest indices that are not running yet
first, then the highest running ones (Volcano removes the highest indices whatever
they do, which kills training pods while pending ones stay: volcano#2074); scaling out
and replacing a pod create the lowest free indices, so a failed pod comes back under
its own name once its predecessor is gone. Every pod that still exists counts, a
terminating one included, so a pod being replaced is never doubled.
"""

from __future__ import annotations

from collections.abc import Sequence

from caldera.controller.pods import pod_name
from caldera.core.elastic import elastic_range
from caldera.core.objects import POD_RUNNING, Job, Pod, TaskSpec


def elastic_sync(job: Job, task: TaskSpec, pods: Sequence[Pod]) -> tuple[list[str], list[tuple[str, int]]]:
    """(pods to delete, (task, index) to create) for an elastic task with `pods` of the job."""
    mine = [p for p in pods if p.task == task.name]
    surplus = len(mine) - task.replicas
    if surplus > 0:
        # Already terminating first (they are on their way out), then not running, then the highest index.
        order = sorted(
            mine,
            key=lambda p: (p.deletion_timestamp is None, p.status.phase == POD_RUNNING, -p.index),
        )
        victims = order[:surplus]
        return [p.name for p in victims if p.deletion_timestamp is None], []
    taken = {p.name for p in pods}
    create: list[tuple[str, int]] = []
    index = 0
    while len(create) < -surplus:
        if pod_name(job.name, task.name, index) not in taken:
            create.append((task.name, index))
        index += 1
    return [], create


def replaceable(job: Job, task: str, pod: str) -> bool:
    """Whether a failed pod of `task` is re-created in place (pod-level recovery) rather than costing a retry."""
    spec = job.spec.task(task)
    if spec is None or elastic_range(job, task) is None:
        return False
    return job.status.pod_retries.get(pod, 0) < spec.max_retry
