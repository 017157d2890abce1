"""The TTL queue: finished jobs are handed out once their ttlSecondsAfterFinished has passed."""

from __future__ import annotations

from dataclasses import replace

from caldera.controller import TtlQueue
from caldera.core.objects import COMPLETED, FAILED, RUNNING, Job

from .builders import make_job, make_task


def finished(name: str, at: float, ttl: int | None, phase: str = COMPLETED) -> Job:
    job = make_job(name=name, tasks=[make_task()], phase=phase, ttl_seconds_after_finished=ttl)
    job.status = replace(job.status, completion_time=at, last_transition_time=at)
    return job


def test_due_in_deadline_order_and_only_once() -> None:
    jobs = {j.key: j for j in (finished("a", 10, 50), finished("b", 0, 30, FAILED), finished("c", 5, None))}
    queue = TtlQueue()
    for job in jobs.values():
        queue.watch(job)
    assert queue.next_due(jobs) == 30.0
    assert queue.due(29.0, jobs) == []
    assert queue.due(60.0, jobs) == ["default/b", "default/a"]
    assert queue.due(1000.0, jobs) == []
    assert queue.next_due(jobs) is None


def test_jobs_deleted_or_running_are_skipped() -> None:
    gone, running = finished("gone", 0, 10), finished("running", 0, 10)
    queue = TtlQueue()
    queue.watch(gone)
    queue.watch(running)
    running.status = replace(running.status, phase=RUNNING)
    jobs = {running.key: running}
    assert queue.next_due(jobs) == 10.0
    assert queue.due(10.0, jobs) == []
