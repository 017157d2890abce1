"""Victims by rank: the preemption rule shared by plugins that order jobs by one number (las, srtf).

A job may take from another job of lower PriorityClass, or of the same PriorityClass
whose rank is worse (higher) than its own; never from itself.
"""

from __future__ import annotations

from collections.abc import Callable

from caldera.scheduler.state import JobInfo, TaskInfo


def victims_by_rank(
    preemptor: TaskInfo, candidates: list[TaskInfo], rank: Callable[[JobInfo], float]
) -> list[TaskInfo]:
    job = preemptor.job
    mine = rank(job)
    last: JobInfo | None = None  # a job's tasks come together: one verdict per run of them
    ok = False
    out = []
    for c in candidates:
        v = c.job
        if v is not last:
            last = v
            ok = v is not job and (v.priority < job.priority or (v.priority == job.priority and rank(v) > mine))
        if ok:
            out.append(c)
    return out
