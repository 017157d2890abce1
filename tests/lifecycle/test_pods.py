"""What happens to one pod: restart policies in place, eviction, and a lost node."""

from __future__ import annotations

from typing import Any

from .simkit import cluster, job, manifest, policy, simulate, task, workload


def test_on_failure_restarts_in_place_and_runs_its_duration_again() -> None:
    m = manifest(tasks=[task(restart_policy="OnFailure")])
    report = simulate(cluster(), workload(job(m), faults=[{"time": 100, "pod": "job-worker-1", "exitCode": 1}]))

    first, second = report.attempts("job-worker-1")
    assert (first["phase"], first["exitCode"], first["endTime"]) == ("Failed", 1, 100.0)
    assert (second["attempt"], second["startTime"], second["endTime"], second["phase"]) == (
        1,
        100.0,
        700.0,
        "Succeeded",
    )
    assert second["node"] == first["node"]  # in place: no new scheduling
    assert [e["time"] for e in report.events("PodRestart", "job-worker-1")] == [100.0]
    row = report.job("job")
    assert (row["phase"], row["retryCount"], row["endTime"]) == ("Completed", 0, 700.0)
    assert "Restarting" not in [p for _, p in report.phases("job")]  # the job never noticed


def test_on_failure_does_not_restart_after_exit_zero() -> None:
    m = manifest(tasks=[task(restart_policy="OnFailure")])
    report = simulate(cluster(), workload(job(m), faults=[{"time": 100, "pod": "job-worker-1", "exitCode": 0}]))
    assert [(a["phase"], a["endTime"]) for a in report.attempts("job-worker-1")] == [("Succeeded", 100.0)]


def test_always_restarts_even_after_exit_zero() -> None:
    """Kubernetes semantics: an Always pod is never Succeeded, so its job never completes by itself."""
    m = manifest(tasks=[task(replicas=1, restart_policy="Always")])
    report = simulate(cluster(), workload(job(m)), until=1500)

    assert [(a["attempt"], a["startTime"], a["endTime"], a["phase"]) for a in report.attempts("job-worker-0")] == [
        (0, 0.0, 600.0, "Succeeded"),
        (1, 600.0, 1200.0, "Succeeded"),
        (2, 1200.0, None, "Running"),
    ]
    row = report.job("job")
    assert (row["phase"], row["endTime"]) == ("Running", None)


def test_a_restart_loop_ends_the_run_without_until() -> None:
    """Nothing but restarts left: the run stops once the task's restarts reached its maxRetry (3 by default)."""
    m = manifest(tasks=[task(replicas=1, restart_policy="Always")])
    report = simulate(cluster(), workload(job(m)))

    assert [a["startTime"] for a in report.attempts("job-worker-0")] == [0.0, 600.0, 1200.0, 1800.0]
    (stop,) = report.events("SimulationStopped")
    assert (stop["time"], stop["reason"]) == (1800.0, "RestartLoop")


def test_a_restart_loop_does_not_stop_the_run_while_a_task_failed_policy_may_fire() -> None:
    """TaskFailed → TerminateJob: the third restart reaches the task's maxRetry and the policy ends the job."""
    m = manifest(
        tasks=[task(replicas=1, restart_policy="Always", maxRetry=3, policies=[policy("TerminateJob", "TaskFailed")])]
    )
    report = simulate(cluster(), workload(job(m, duration=100)))
    row = report.job("job")
    assert (row["phase"], row["endTime"]) == ("Terminated", 300.0)
    assert report.events("SimulationStopped") == []


def test_evicted_pod_raises_pod_evicted() -> None:
    m = manifest(policies=[policy("RestartJob", "PodEvicted")])
    report = simulate(cluster(), workload(job(m), faults=[{"time": 100, "pod": "job-worker-1", "evict": True}]))

    (evict,) = report.events("Evict")
    assert (evict["time"], evict["object"], evict["reason"]) == (100.0, "job-worker-1", "Evicted")
    row = report.job("job")
    assert (row["phase"], row["retryCount"], row["endTime"]) == ("Completed", 1, 700.0)


def test_a_lone_evicted_pod_restarts_its_job() -> None:
    """Regression: with its only pod already gone, a restarting job must still move on (Volcano re-syncs on a phase change)."""
    m = manifest(tasks=[task(replicas=1)], policies=[policy("RestartJob", "PodEvicted")])
    report = simulate(cluster(), workload(job(m), faults=[{"time": 100, "pod": "job-worker-0", "evict": True}]))
    row = report.job("job")
    assert (row["phase"], row["retryCount"], row["endTime"]) == ("Completed", 1, 700.0)


def where(pod: str, **kwargs: Any) -> str:
    """The node `pod` lands on in a run without faults (placement is deterministic)."""
    report = simulate(cluster(nodes=3), workload(job(manifest(**kwargs))))
    return str(report.attempts(pod)[0]["node"])


def test_node_down_evicts_its_pods_and_the_job_restarts_elsewhere() -> None:
    restart = [policy("RestartJob", "PodEvicted")]
    node = where("job-worker-0", tasks=[task(gpus=2)], policies=restart)
    m = manifest(tasks=[task(gpus=2)], policies=restart)  # one pod per node
    report = simulate(cluster(nodes=3), workload(job(m), faults=[{"time": 100, "node": node, "down": True}]))

    assert [(e["time"], e["object"]) for e in report.events("NodeDown")] == [(100.0, node)]
    lost = report.events("Evict", "job-worker-0")
    assert [(e["time"], e["reason"], e["node"]) for e in lost] == [(100.0, "NodeLost", node)]
    for pod in ("job-worker-0", "job-worker-1"):
        rerun = report.attempts(pod)[-1]
        assert (rerun["attempt"], rerun["startTime"], rerun["endTime"]) == (1, 100.0, 700.0)
        assert rerun["node"] != node
    row = report.job("job")
    assert (row["phase"], row["retryCount"]) == ("Completed", 1)


def test_node_down_without_a_policy_recreates_the_lost_pod() -> None:
    """No PodEvicted policy: SyncJob re-creates the missing pod; no retry is counted."""
    node = where("job-worker-0", tasks=[task(gpus=2)])
    report = simulate(
        cluster(nodes=3),
        workload(job(manifest(tasks=[task(gpus=2)])), faults=[{"time": 100, "node": node, "down": True}]),
    )
    assert [(a["attempt"], a["startTime"]) for a in report.attempts("job-worker-0")] == [(0, 0.0), (1, 100.0)]
    assert len(report.attempts("job-worker-1")) == 1
    row = report.job("job")
    assert (row["phase"], row["retryCount"], row["endTime"]) == ("Completed", 0, 700.0)
