"""gang: all of a job's minimum tasks, or none.

A job is ready when at least minAvailable tasks (and each task's minTaskMember)
are placed; allocate commits a statement only for a ready job. Jobs not yet
ready are ordered first, so a gang that was partly admitted is finished before
fresh jobs start. On close, the reason a gang could not be placed is written
in Volcano's words: `3/4 tasks in gang unschedulable: <fit errors>`.

BestEffort pods (no requests: a tf parameter server, an MPI launcher) are placed by
backfill, after allocate has committed the pods that request; so a pending BestEffort
pod counts towards its gang's readiness and pipelining, per task too (Volcano's
`IsReady`, `CheckTaskReady`, `CheckTaskPipelined`). Otherwise a gang mixing both
would never start: allocate would wait for the BestEffort pods, backfill for the others.
"""

from __future__ import annotations

from caldera.scheduler.framework import PERMIT, REJECT, Plugin
from caldera.scheduler.state import READY, JobInfo, TaskStatus

_WAITING = frozenset({TaskStatus.PIPELINED})


def _pending_best_effort(job: JobInfo) -> int:
    if not job.counts.get(TaskStatus.PENDING):
        return 0
    return sum(1 for t in job.tasks.values() if t.status is TaskStatus.PENDING and t.best_effort)


def _per_task_ready(job: JobInfo, extra: frozenset[TaskStatus] = frozenset()) -> bool:
    # As Volcano's CheckTaskReady: per-task minimums bind only when the job's minAvailable covers them all.
    # Task minAvailable defaults to replicas, so an elastic job (minAvailable < Σ replicas) has only its total.
    if not job.min_task_member or job.min_available < sum(job.min_task_member.values()):
        return True
    counts: dict[str, int] = {}
    for t in job.tasks.values():
        if t.status in READY or t.status in extra or (t.status is TaskStatus.PENDING and t.best_effort):
            counts[t.task] = counts.get(t.task, 0) + 1
    return all(counts.get(name, 0) >= n for name, n in job.min_task_member.items())


class Gang(Plugin):
    name = "gang"

    def job_valid(self, job: JobInfo) -> bool:
        return len(job.tasks) - job.counts.get(TaskStatus.FAILED, 0) >= job.min_available

    def job_ready(self, job: JobInfo) -> bool:
        # Pending BestEffort tasks count: backfill places them wherever a pod slot is free.
        return job.count(READY) + _pending_best_effort(job) >= job.min_available and _per_task_ready(job)

    def job_pipelined(self, job: JobInfo) -> int:
        occupied = job.count(READY | _WAITING) + _pending_best_effort(job)
        return PERMIT if occupied >= job.min_available and _per_task_ready(job, _WAITING) else REJECT

    def job_starving(self, job: JobInfo) -> bool:
        return job.count(READY | _WAITING) < job.min_available

    def job_order(self, job: JobInfo) -> tuple[object, ...]:
        return (1 if self.job_ready(job) else 0,)

    def on_session_close(self) -> None:
        for key, why in list(self.ssn.unschedulable.items()):
            job = self.ssn.state.jobs.get(key)
            if job is None:
                continue
            unready = max(job.min_available - job.count(READY), 0)
            self.ssn.unschedulable[key] = f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {why}"
