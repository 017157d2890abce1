"""Counting pods and building the next JobStatus."""

from __future__ import annotations

from caldera.controller import PodCounts, build_status, job_status_counts
from caldera.core.objects import (
    ABORTED,
    COMPLETED,
    PENDING,
    POD_FAILED,
    POD_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    POD_UNKNOWN,
    RESTARTING,
    RUNNING,
)

from .builders import make_job, make_pod_of, make_pods, make_task


def test_counts_by_phase_with_kills_and_creations() -> None:
    job = make_job(tasks=[make_task(name="ps", replicas=2), make_task(name="worker", replicas=4)])
    pods = make_pods(
        job,
        phases={"ps": [POD_RUNNING, POD_PENDING], "worker": [POD_SUCCEEDED, POD_FAILED, POD_UNKNOWN, POD_RUNNING]},
    )
    pods[1].deletion_timestamp = 5.0
    counts = job_status_counts(pods, killed={"job-worker-3"}, created=[("ps", 1)])
    assert counts == PodCounts(
        pending=1, running=1, succeeded=1, failed=1, terminating=2, unknown=1, succeeded_by_task={"ps": 0, "worker": 1}
    )
    assert counts.alive == 4


def test_a_task_with_only_terminating_pods_is_absent_from_the_task_counts() -> None:
    job = make_job()
    counts = job_status_counts([make_pod_of(job, deleting=True)])
    assert counts.succeeded_by_task == {}


def test_phase_change_appends_a_condition_and_sets_the_transition_time() -> None:
    job = make_job(phase=PENDING)
    job.status.conditions.append((PENDING, 1.0))
    status = build_status(job, PodCounts(running=2), phase=RUNNING, now=7.0, retry_count=0, version=0, reason="R")
    assert (status.phase, status.last_transition_time, status.reason) == (RUNNING, 7.0, "R")
    assert status.conditions == [(PENDING, 1.0), (RUNNING, 7.0)]
    assert job.status.conditions == [(PENDING, 1.0)]  # the old status is untouched


def test_same_phase_keeps_conditions_reason_and_transition_time() -> None:
    job = make_job(phase=RUNNING)
    job.status.reason, job.status.last_transition_time = "MinAvailable", 3.0
    status = build_status(job, PodCounts(running=1), phase=RUNNING, now=9.0, retry_count=0, version=0, reason="X")
    assert (status.reason, status.last_transition_time, status.conditions) == ("MinAvailable", 3.0, [])
    assert status.running == 1


def test_start_time_is_when_min_available_first_ran_and_survives_restarts() -> None:
    job = make_job(tasks=[make_task(replicas=2)])
    status = build_status(job, PodCounts(running=1), phase=PENDING, now=1.0, retry_count=0, version=0)
    assert status.start_time is None
    job.status = build_status(job, PodCounts(running=1, succeeded=1), phase=RUNNING, now=2.0, retry_count=0, version=0)
    assert job.status.start_time == 2.0
    job.status = build_status(job, PodCounts(terminating=2), phase=RESTARTING, now=3.0, retry_count=1, version=1)
    assert job.status.start_time == 2.0


def test_completion_time_on_finishing_and_cleared_on_resume() -> None:
    job = make_job(phase=RUNNING)
    job.status = build_status(job, PodCounts(), phase=ABORTED, now=4.0, retry_count=0, version=1)
    assert job.status.completion_time == 4.0
    job.status = build_status(job, PodCounts(), phase=RESTARTING, now=5.0, retry_count=1, version=2)
    assert job.status.completion_time is None
    job.status = build_status(job, PodCounts(succeeded=2), phase=COMPLETED, now=6.0, retry_count=1, version=3)
    assert job.status.completion_time == 6.0


def test_min_available_mirrors_the_spec() -> None:
    job = make_job(tasks=[make_task(replicas=4)], min_available=3)
    status = build_status(job, PodCounts(), phase=PENDING, now=0.0, retry_count=0, version=0)
    assert status.min_available == 3
