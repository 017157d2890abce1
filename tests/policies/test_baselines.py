"""The baselines people know, each shown by a scenario: kube-default's requeueing, gang-fifo-backfill's
backfill, srtf-gpu against srtf."""

from __future__ import annotations

from typing import Any

from caldera.scheduler.policies import policy_text
from caldera.testing.scenario import arrival, cluster, gpu_nodes, run_scenario, start_time, task, vcjob, workload


def run(policy: str, *arrivals: dict[str, Any], gpus: int = 2) -> dict[str, Any]:
    return run_scenario(
        cluster=cluster(nodes=[gpu_nodes(count=1, gpus=gpus)]), workload=workload(*arrivals), config=policy_text(policy)
    )


def shapes(policy: str) -> dict[str, Any]:
    """2 GPUs. j1 (1 GPU) runs 0-1000. big (one 2-GPU pod) arrives at 10 and is set aside; small (1 GPU)
    arrives at 20 and fits. At 1000 j1 ends."""
    return run(
        policy,
        arrival(vcjob("j1"), duration=1000),
        arrival(vcjob("big", tasks=[task(gpus=2)]), at=10, duration=100),
        arrival(vcjob("small"), at=20, duration=2000),
    )


def test_kube_default_places_a_later_small_pod_around_a_big_one_set_aside() -> None:
    report = shapes("kube-default")
    assert start_time(report, "small") == 20.0
    assert start_time(report, "big") == 2020.0


def test_kube_default_keeps_arrival_order_among_pods_of_one_shape() -> None:
    """2 GPUs. j1 (1 GPU) runs 0-1000; j2 (2 one-GPU pods) arrives at 10, binds one and sets the other
    aside; j3 (1 GPU) arrives at 20 and is set aside too, after it: at 1000 j2's pod goes first, while
    j2's bound pod held a GPU for nothing from 10 to 1000."""
    report = run(
        "kube-default",
        arrival(vcjob("j1"), duration=1000),
        arrival(vcjob("j2", tasks=[task(replicas=2)]), at=10, duration=100),
        arrival(vcjob("j3"), at=20, duration=100),
    )
    assert start_time(report, "j2") == 1000.0
    assert start_time(report, "j3") == 1100.0


def backfill(policy: str) -> dict[str, Any]:
    """2 GPUs. a (1 GPU) runs 0-1000; b (2 GPUs) arrives at 10 and cannot fit; c (1 GPU) arrives at 20."""
    return run(
        policy,
        arrival(vcjob("a"), duration=1000),
        arrival(vcjob("b", tasks=[task(replicas=2)]), at=10, duration=100),
        arrival(vcjob("c"), at=20, duration=100),
    )


def test_gang_fifo_backfill_starts_a_later_job_that_fits() -> None:
    report = backfill("gang-fifo-backfill")
    assert start_time(report, "c") == 20.0
    assert start_time(report, "b") == 1000.0


def test_srtf_goes_by_remaining_time_and_srtf_gpu_by_remaining_gpu_time() -> None:
    """4 GPUs. wide: 4 GPUs × 100 s (400 GPU-s); narrow: 1 GPU × 300 s. srtf runs wide first, srtf-gpu
    narrow first (and wide, with more GPU-time left, may not preempt it)."""
    jobs = (
        arrival(vcjob("wide", tasks=[task(replicas=4)]), duration=100),
        arrival(vcjob("narrow"), duration=300),
    )
    by_time = run("srtf", *jobs, gpus=4)
    by_gpu_time = run("srtf-gpu", *jobs, gpus=4)
    assert (start_time(by_time, "wide"), start_time(by_time, "narrow")) == (0.0, 100.0)
    assert (start_time(by_gpu_time, "narrow"), start_time(by_gpu_time, "wide")) == (0.0, 300.0)
