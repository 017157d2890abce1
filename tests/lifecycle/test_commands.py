"""User commands in WORKLOAD.yaml (`commands:`, a caldera extension): AbortJob and ResumeJob, as vcctl does."""

from __future__ import annotations

from .simkit import cluster, job, manifest, policy, simulate, workload


def command(at: float, action: str, target: str = "job") -> dict[str, object]:
    return {"time": at, "job": target, "action": action}


def test_abort_then_resume() -> None:
    """Aborting stops every pod and keeps the job; resuming re-creates its pods as a retry."""
    report = simulate(
        cluster(), workload(job(manifest()), commands=[command(100, "AbortJob"), command(300, "ResumeJob")])
    )

    for pod in ("job-worker-0", "job-worker-1"):
        assert [(a["attempt"], a["startTime"], a["endTime"]) for a in report.attempts(pod)] == [
            (0, 0.0, 100.0), (1, 300.0, 900.0)
        ]  # fmt: skip
    assert report.phases("job") == [
        (0.0, "Pending"), (0.0, "Running"), (100.0, "Aborting"), (100.0, "Aborted"),
        (300.0, "Restarting"), (300.0, "Pending"), (300.0, "Running"), (900.0, "Completed"),
    ]  # fmt: skip
    row = report.job("job")
    assert (row["phase"], row["retryCount"], row["endTime"]) == ("Completed", 1, 900.0)
    assert [(e["time"], e["reason"]) for e in report.events("Command")] == [(100.0, "AbortJob"), (300.0, "ResumeJob")]


def test_an_aborted_job_stays_aborted_and_has_no_end() -> None:
    report = simulate(cluster(), workload(job(manifest()), commands=[command(100, "AbortJob")]))
    row = report.job("job")
    assert (row["phase"], row["endTime"]) == ("Aborted", None)  # Aborted is not finished: it can be resumed


def test_abort_by_policy_then_resume_by_command() -> None:
    m = manifest(policies=[policy("AbortJob", "PodEvicted")])
    faults = [{"time": 100, "pod": "job-worker-0", "evict": True}]
    report = simulate(cluster(), workload(job(m), faults=faults, commands=[command(200, "ResumeJob")]))
    assert (100.0, "Aborted") in report.phases("job")
    row = report.job("job")
    assert (row["phase"], row["retryCount"], row["endTime"]) == ("Completed", 1, 800.0)


def test_commands_may_name_a_job_by_namespace_and_name() -> None:
    m = manifest()
    m["metadata"]["namespace"] = "team-a"
    report = simulate(cluster(), workload(job(m), commands=[command(100, "TerminateJob", "team-a/job")]))
    row = report.job("job")
    assert (row["namespace"], row["phase"], row["endTime"]) == ("team-a", "Terminated", 100.0)


def test_a_command_for_a_job_deleted_meanwhile_is_recorded_and_ignored() -> None:
    m = manifest(ttlSecondsAfterFinished=10)
    report = simulate(cluster(), workload(job(m, duration=50), commands=[command(100, "ResumeJob")]))
    (cmd,) = report.events("Command")
    assert (cmd["time"], cmd["message"]) == (100.0, "no such job")
    assert report.job("job")["phase"] == "Completed"
