"""The run as a whole: --until, jobs admission refuses, faults that hit nothing."""

from __future__ import annotations

from .simkit import cluster, job, manifest, queue, simulate, workload


def test_until_stops_the_clock_with_pods_still_running() -> None:
    report = simulate(cluster(), workload(job(manifest("early")), job(manifest("late"), submit=400)), until=300)

    assert [j["name"] for j in report.doc["jobs"]] == ["early"]  # "late" has not arrived yet
    row = report.job("early")
    assert (row["phase"], row["startTime"], row["endTime"]) == ("Running", 0.0, None)
    assert [(p["startTime"], p["endTime"], p["phase"], p["exitCode"]) for p in report.pods_of("early")] == [
        (0.0, None, "Running", None)
    ] * 2
    assert max(e["time"] for e in report.doc["events"]) <= 300.0
    assert report.doc["summary"]["makespan"] is None  # nothing finished


def test_until_exactly_at_an_ending_includes_it() -> None:
    report = simulate(cluster(), workload(job(manifest())), until=600)
    assert report.job("job")["endTime"] == 600.0


def test_a_job_for_a_closed_queue_is_rejected() -> None:
    c = cluster(queues=[queue("shut", state="Closed")])
    report = simulate(c, workload(job(manifest("refused", queue="shut")), job(manifest("fine"))))

    row = report.job("refused")
    assert (row["phase"], row["queue"], row["startTime"], row["endTime"]) == ("Rejected", "shut", None, None)
    (event,) = report.events("Rejected")
    assert event["object"] == "refused"
    assert "Closed" in event["message"]
    assert report.pods_of("refused") == []
    assert report.job("fine")["phase"] == "Completed"


def test_a_job_for_a_queue_that_does_not_exist_is_rejected() -> None:
    report = simulate(cluster(), workload(job(manifest(queue="nowhere"))))
    assert report.job("job")["phase"] == "Rejected"
    assert 'queue "nowhere" does not exist' in report.events("Rejected")[0]["message"]


def test_a_fault_on_a_pod_that_is_not_running_is_recorded_as_ignored() -> None:
    """An exit code for a pod that already ended is ignored; evicting it deletes it, which loses no work."""
    faults = [{"time": 700, "pod": "job-worker-0", "exitCode": 1}, {"time": 800, "pod": "job-worker-1", "evict": True}]
    report = simulate(cluster(), workload(job(manifest()), faults=faults))
    assert [(e["time"], e["object"]) for e in report.events("FaultIgnored")] == [(700.0, "job-worker-0")]
    assert [(e["time"], e["object"]) for e in report.events("Evict")] == [(800.0, "job-worker-1")]
    row = report.job("job")
    assert (row["phase"], row["retryCount"], row["endTime"]) == ("Completed", 0, 600.0)


def test_summary_of_a_simple_run() -> None:
    """One 600 s job of two 1-GPU pods on 8 GPUs: JCT 600, no queueing, a quarter of the GPUs used."""
    report = simulate(cluster(), workload(job(manifest())))
    assert report.doc["summary"] == {
        "jobs": 1,
        "avgJCT": 600.0,
        "p99JCT": 600.0,
        "avgQueueDelay": 0.0,
        "makespan": 600.0,
        "gpuUtilization": 0.25,
    }


def test_scheduler_evictions_are_reported_by_kind() -> None:
    """A high-priority job preempts a low-priority one: its pods' evictions are Preempt events."""
    c = cluster(nodes=1, priorityClasses=[{"name": "high", "value": 1000}, {"name": "low", "value": 10}])
    low = job(manifest("low", priorityClassName="low"), duration=1000)
    high = job(manifest("high", priorityClassName="high"), submit=100)
    report = simulate(c, workload(low, high))

    preempted = report.events("Preempt")
    assert [(e["time"], e["object"]) for e in preempted] == [(100.0, "low-worker-0"), (100.0, "low-worker-1")]
    assert all(e["message"] == "preempted by default/high" for e in preempted)
    assert report.job("high")["startTime"] == 100.0
