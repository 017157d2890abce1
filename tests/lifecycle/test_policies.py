"""Lifecycle policies through the simulator: each action, maxRetry, minSuccess and exit-code policies."""

from __future__ import annotations

import pytest

from .simkit import Doc, cluster, job, manifest, policy, simulate, task, workload


def fail(pod: str, at: float, code: int = 1) -> Doc:
    return {"time": at, "pod": pod, "exitCode": code}


def test_restart_job_recreates_every_pod_as_the_next_attempt() -> None:
    m = manifest(policies=[policy("RestartJob", "PodFailed")])
    report = simulate(cluster(), workload(job(m), faults=[fail("job-worker-1", 100)]))

    failed, rerun = report.attempts("job-worker-1")
    assert (failed["phase"], failed["exitCode"], failed["endTime"]) == ("Failed", 1, 100.0)
    killed, rerun0 = report.attempts("job-worker-0")
    assert killed["endTime"] == 100.0  # killed with the job, though it had not failed
    for attempt in (rerun, rerun0):
        assert (attempt["attempt"], attempt["startTime"], attempt["endTime"], attempt["phase"]) == (
            1, 100.0, 700.0, "Succeeded"
        )  # fmt: skip
    row = report.job("job")
    assert (row["phase"], row["retryCount"], row["startTime"], row["endTime"]) == ("Completed", 1, 0.0, 700.0)
    assert [p for _, p in report.phases("job")] == [
        "Pending",
        "Running",
        "Restarting",
        "Pending",
        "Running",
        "Completed",
    ]


def test_restart_task_recreates_only_that_task() -> None:
    m = manifest(tasks=[task("ps", replicas=1), task("worker", policies=[policy("RestartTask", "PodFailed")])])
    report = simulate(cluster(), workload(job(m), faults=[fail("job-worker-1", 100)]))

    assert [a["endTime"] for a in report.attempts("job-ps-0")] == [600.0]  # untouched
    for pod in ("job-worker-0", "job-worker-1"):
        assert [(a["attempt"], a["startTime"], a["endTime"]) for a in report.attempts(pod)] == [
            (0, 0.0, 100.0), (1, 100.0, 700.0)
        ]  # fmt: skip
    row = report.job("job")
    assert (row["phase"], row["retryCount"], row["endTime"]) == ("Completed", 1, 700.0)


def test_restart_pod_recreates_only_that_pod() -> None:
    m = manifest(policies=[policy("RestartPod", "PodFailed")])
    report = simulate(cluster(), workload(job(m), faults=[fail("job-worker-1", 100)]))

    assert [(a["attempt"], a["endTime"]) for a in report.attempts("job-worker-0")] == [(0, 600.0)]
    assert [(a["attempt"], a["startTime"], a["endTime"]) for a in report.attempts("job-worker-1")] == [
        (0, 0.0, 100.0), (1, 100.0, 700.0)
    ]  # fmt: skip
    row = report.job("job")
    assert (row["phase"], row["retryCount"], row["endTime"]) == ("Completed", 1, 700.0)


def test_terminate_job_stops_everything_for_good() -> None:
    m = manifest(policies=[policy("TerminateJob", "PodFailed")])
    commands = [{"time": 200, "job": "job", "action": "ResumeJob"}]  # a terminated job cannot be resumed
    report = simulate(cluster(), workload(job(m), faults=[fail("job-worker-1", 100)], commands=commands))

    assert [(a["phase"], a["endTime"]) for a in report.attempts("job-worker-1")] == [("Failed", 100.0)]
    assert [a["endTime"] for a in report.attempts("job-worker-0")] == [100.0]
    assert report.phases("job")[-2:] == [(100.0, "Terminating"), (100.0, "Terminated")]
    row = report.job("job")
    assert (row["phase"], row["endTime"], row["retryCount"]) == ("Terminated", 100.0, 0)


def test_complete_job_when_the_master_finishes() -> None:
    """The master's TaskCompleted completes the job; the workers, meant to run until stopped, are stopped."""
    m = manifest(tasks=[task("master", replicas=1, policies=[policy("CompleteJob", "TaskCompleted")]), task("worker")])
    report = simulate(cluster(), workload(job(m, duration=None, durations={"master": 300})))

    assert [a["endTime"] for a in report.attempts("job-worker-0")] == [300.0]
    row = report.job("job")
    assert (row["phase"], row["endTime"]) == ("Completed", 300.0)
    assert report.phases("job")[-2:] == [(300.0, "Completing"), (300.0, "Completed")]


@pytest.mark.parametrize("max_retry", [1, 2, 3])  # 0 is not a case: Volcano's webhook reads it as unset (3)
def test_failed_after_max_retry_retries(max_retry: int) -> None:
    """maxRetry counts retries: maxRetry restarts happen, the next failure fails the job with retryCount maxRetry."""
    m = manifest(policies=[policy("RestartJob", "PodFailed")], maxRetry=max_retry)
    failures = [fail("job-worker-1", 100.0 * (i + 1)) for i in range(max_retry + 1)]
    report = simulate(cluster(), workload(job(m), faults=failures))

    last = 100.0 * (max_retry + 1)
    row = report.job("job")
    assert (row["phase"], row["retryCount"], row["endTime"]) == ("Failed", max_retry, last)
    assert len(report.attempts("job-worker-1")) == max_retry + 1
    assert report.phases("job")[-1] == (last, "Failed")
    assert report.phases("job")[-2][1] == "Running"  # refused at once: no Restarting on the way
    assert [p for _, p in report.phases("job")].count("Restarting") == max_retry
    final = report.attempts("job-worker-1")[-1]
    assert (final["phase"], final["exitCode"]) == ("Failed", 1)


def test_min_success_completes_the_job_early() -> None:
    """3 workers, minSuccess 2: the second success completes the job and stops the third."""
    m = manifest(tasks=[task(replicas=3)], minSuccess=2)
    faults = [fail("job-worker-1", 100, code=0), fail("job-worker-0", 200, code=0)]
    report = simulate(cluster(), workload(job(m, duration=None), faults=faults))

    assert [(a["phase"], a["endTime"]) for a in report.attempts("job-worker-2")] == [("Failed", 200.0)]
    row = report.job("job")
    assert (row["phase"], row["endTime"]) == ("Completed", 200.0)


@pytest.mark.parametrize(
    ("code", "phase", "retries"),
    [
        pytest.param(137, "Completed", 1, id="137-matches-the-policy-restarts"),
        pytest.param(2, "Failed", 0, id="other-code-default-action-job-fails"),
    ],
)
def test_exit_code_policy(code: int, phase: str, retries: int) -> None:
    """exitCode 137 → RestartJob; any other code takes the default (the failed pod stays failed)."""
    m = manifest(policies=[policy("RestartJob", exit_code=137)])
    report = simulate(cluster(), workload(job(m), faults=[fail("job-worker-1", 100, code)]))

    row = report.job("job")
    assert (row["phase"], row["retryCount"]) == (phase, retries)
    assert len(report.attempts("job-worker-1")) == 1 + retries
    # Failed: one pod failed and one succeeded, short of minAvailable 2 (Volcano's rule d).
    assert row["endTime"] == (700.0 if retries else 600.0)


def test_exit_code_policy_on_a_later_run() -> None:
    """A 137 restarts the job; a later exit 2 is not matched and the job fails when its pods are done."""
    m = manifest(policies=[policy("RestartJob", exit_code=137)])
    faults = [fail("job-worker-1", 100, 137), fail("job-worker-1", 300, 2)]
    report = simulate(cluster(), workload(job(m), faults=faults))

    assert [(a["attempt"], a["exitCode"]) for a in report.attempts("job-worker-1")] == [(0, 137), (1, 2)]
    row = report.job("job")
    assert (row["phase"], row["retryCount"], row["endTime"]) == ("Failed", 1, 700.0)
