"""The PaddlePaddle CTR job from the Volcano article: 2 pservers + 2 trainers, one gang of 4."""

from __future__ import annotations

from typing import Any

from .simkit import cluster, fixture_manifest, job, simulate, workload

CTR = "ctr-volcano"


def ctr_job(**extra: Any) -> dict[str, Any]:
    return job(
        fixture_manifest("ctr-volcano.yaml"), duration=None, durations={"pserver": None, "trainer": 600}, **extra
    )


def test_trainers_finishing_complete_the_job_and_stop_the_pservers() -> None:
    report = simulate(cluster(nodes=2), workload(ctr_job()))

    pods = report.pods_of(CTR)
    assert sorted(p["name"] for p in pods) == [
        f"{CTR}-pserver-0",
        f"{CTR}-pserver-1",
        f"{CTR}-trainer-0",
        f"{CTR}-trainer-1",
    ]
    assert {p["startTime"] for p in pods} == {0.0}  # the four start together
    assert {p["attempt"] for p in pods} == {0}
    trainers = [p for p in pods if p["task"] == "trainer"]
    assert [(p["endTime"], p["phase"], p["exitCode"]) for p in trainers] == [(600.0, "Succeeded", 0)] * 2
    pservers = [p for p in pods if p["task"] == "pserver"]
    assert [p["endTime"] for p in pservers] == [600.0, 600.0]  # stopped the moment the job completed
    assert {e["object"] for e in report.events("PodDeleted")} == {f"{CTR}-pserver-0", f"{CTR}-pserver-1"}

    assert report.phases(CTR) == [(0.0, "Pending"), (0.0, "Running"), (600.0, "Completing"), (600.0, "Completed")]
    row = report.job(CTR)
    assert (row["startTime"], row["endTime"], row["phase"], row["retryCount"]) == (0.0, 600.0, "Completed", 0)


def test_no_pod_starts_before_the_whole_gang_fits() -> None:
    """Three pod slots' worth of GPUs for a gang of four: nothing runs (minAvailable 4)."""
    manifest = fixture_manifest("ctr-volcano.yaml")
    for t in manifest["spec"]["tasks"]:
        t["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    report = simulate(cluster(nodes=3, gpus=1), workload(job(manifest, duration=None, durations={"trainer": 600})))
    assert all(p["startTime"] is None for p in report.pods_of(CTR))
    assert report.events("Bind") == []
    assert report.job(CTR)["phase"] == "Pending"


def test_an_evicted_trainer_restarts_the_whole_job() -> None:
    """PodEvicted → RestartJob: all four pods are re-created together as attempt 1, then the job completes."""
    report = simulate(
        cluster(nodes=2), workload(ctr_job(), faults=[{"time": 200, "pod": f"{CTR}-trainer-1", "evict": True}])
    )
    for pod in (f"{CTR}-pserver-0", f"{CTR}-pserver-1", f"{CTR}-trainer-0", f"{CTR}-trainer-1"):
        first, second = report.attempts(pod)
        assert (first["startTime"], first["endTime"]) == (0.0, 200.0)
        assert (second["attempt"], second["startTime"], second["endTime"]) == (1, 200.0, 800.0)
    row = report.job(CTR)
    assert (row["phase"], row["retryCount"], row["endTime"]) == ("Completed", 1, 800.0)
    assert [p for _, p in report.phases(CTR)] == [
        "Pending", "Running", "Restarting", "Pending", "Running", "Completing", "Completed"
    ]  # fmt: skip
