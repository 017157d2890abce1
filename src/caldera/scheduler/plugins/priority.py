"""priority: order jobs and tasks by PriorityClass value; only strictly lower priority may be preempted."""

from __future__ import annotations

from caldera.scheduler.framework import Plugin
from caldera.scheduler.state import JobInfo, TaskInfo, TaskStatus


class Priority(Plugin):
    name = "priority"

    def job_order(self, job: JobInfo) -> tuple[object, ...]:
        return (-job.priority,)

    def task_order(self, task: TaskInfo) -> tuple[object, ...]:
        return (-task.priority,)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        job = preemptor.job
        return [
            c
            for c in candidates
            if (c.job is job and c.priority < preemptor.priority)
            or (c.job is not job and c.job.priority < job.priority)
        ]

    def job_starving(self, job: JobInfo) -> bool:
        """A job is starving while some of its tasks are not placed."""
        return job.counts.get(TaskStatus.PENDING, 0) > 0
