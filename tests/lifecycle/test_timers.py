"""Timed lifecycle: a PodPending policy with a timeout, and ttlSecondsAfterFinished."""

from __future__ import annotations

import pytest

from caldera.scheduler.policies import load_policy

from .simkit import cluster, job, manifest, policy, simulate, task, workload

ABORT_IF_PENDING_60S = policy("AbortJob", "PodPending", timeout="60s")


def test_pod_pending_timeout_aborts_a_job_that_cannot_be_scheduled() -> None:
    """Each pod asks for 4 GPUs on 2-GPU nodes: nothing ever binds, the policy aborts the job at t=60."""
    m = manifest(tasks=[task(gpus=4)], policies=[ABORT_IF_PENDING_60S])
    report = simulate(cluster(), workload(job(m)))

    assert report.phases("job") == [(0.0, "Pending"), (60.0, "Aborting"), (60.0, "Aborted")]
    assert report.events("Bind") == []
    assert report.pods_of("job") == []  # its pods were deleted, none ever ran


def test_pod_pending_timeout_for_the_pods_beyond_the_gang() -> None:
    """minAvailable 1 of 3 on 2 GPUs: two run, the third stays Pending and its timer aborts the job."""
    m = manifest(tasks=[task(replicas=3)], minAvailable=1, policies=[ABORT_IF_PENDING_60S])
    report = simulate(cluster(nodes=1), workload(job(m)))

    assert report.phases("job") == [(0.0, "Pending"), (0.0, "Running"), (60.0, "Aborting"), (60.0, "Aborted")]
    started = [p for p in report.pods_of("job") if p["startTime"] is not None]
    assert [(p["startTime"], p["endTime"]) for p in started] == [(0.0, 60.0)] * 2


@pytest.mark.parametrize(
    ("timeout", "phase", "end"),
    [
        pytest.param("200s", "Completed", 700.0, id="starts-before-the-timeout-runs-on"),
        pytest.param("50s", "Aborted", None, id="times-out-before-it-can-start"),
    ],
)
def test_pod_pending_timer_is_cancelled_once_the_pod_runs(timeout: str, phase: str, end: float | None) -> None:
    """3 pods, gang of 1, one 2-GPU node: worker-2 waits until worker-0 ends at t=100, then runs."""
    m = manifest(tasks=[task(replicas=3)], minAvailable=1, policies=[policy("AbortJob", "PodPending", timeout=timeout)])
    faults = [{"time": 100, "pod": "job-worker-0", "exitCode": 0}]
    report = simulate(cluster(nodes=1), workload(job(m), faults=faults))
    row = report.job("job")
    assert (row["phase"], row["endTime"]) == (phase, end)
    if phase == "Completed":
        assert [a["startTime"] for a in report.attempts("job-worker-2")] == [100.0]


def test_pod_pending_timer_starts_only_once_pods_exist() -> None:
    """As in Volcano, pods are created once the PodGroup is admitted: waiting for admission is not PodPending.

    Under Volcano's configuration: caldera-default has no enqueue action, allocate admits every job at
    once, so its pods exist (and their PodPending timers run) while it waits for GPUs."""
    first = job(manifest("first", tasks=[task(replicas=2)]), duration=100)
    second = job(manifest("second", policies=[policy("AbortJob", "PodPending", timeout="50s")]), duration=600)
    report = simulate(cluster(nodes=1), workload(first, second), config=load_policy("volcano-default"))
    row = report.job("second")
    assert (row["phase"], row["startTime"], row["endTime"]) == ("Completed", 100.0, 700.0)


def test_ttl_deletes_the_job_later_and_the_report_keeps_its_last_state() -> None:
    m = manifest(policies=[policy("RestartJob", "PodFailed")], ttlSecondsAfterFinished=100)
    faults = [{"time": 50, "pod": "job-worker-0", "exitCode": 1}]
    report = simulate(cluster(), workload(job(m), faults=faults))

    (deleted,) = report.events("JobDeleted")
    assert (deleted["time"], deleted["object"]) == (750.0, "job")
    row = report.job("job")
    assert (row["phase"], row["endTime"], row["retryCount"]) == ("Completed", 650.0, 1)


def test_ttl_zero_deletes_at_once_and_a_job_without_ttl_stays() -> None:
    report = simulate(
        cluster(),
        workload(job(manifest("gone", ttlSecondsAfterFinished=0), duration=10), job(manifest("kept"), duration=10)),
    )
    assert [(e["time"], e["object"]) for e in report.events("JobDeleted")] == [(10.0, "gone")]
