"""Gang scheduling: all of a job's minimum pods or none, and a condition that says why."""

from __future__ import annotations

from typing import Any

import pytest

from caldera.testing.scenario import (
    arrival,
    binds,
    cluster,
    gpu_nodes,
    job_phase,
    pods_of,
    run_scenario,
    start_time,
    task,
    unschedulable_messages,
    vcjob,
    workload,
)

from .configs import NO_ENQUEUE, VOLCANO_SHAPE

FOUR_GPUS = cluster(nodes=[gpu_nodes(count=2, gpus=2)])
# Volcano's plugins with and without enqueue, and the built-in configuration (caldera-default)
CONFIGS = [
    pytest.param(VOLCANO_SHAPE, id="volcano-shape"),
    pytest.param(NO_ENQUEUE, id="no-enqueue"),
    pytest.param(None, id="default"),
]


def gang(name: str, workers: int = 4) -> dict[str, Any]:
    return vcjob(name, tasks=[task(replicas=workers)], min_available=workers)


@pytest.mark.parametrize("config", CONFIGS)
def test_two_gangs_on_four_gpus_run_one_after_the_other(config: dict[str, Any] | None) -> None:
    """The Kubeflow + Volcano deadlock: pod by pod each job would hold two GPUs and wait forever."""
    report = run_scenario(
        cluster=FOUR_GPUS, workload=workload(arrival(gang("tf-a")), arrival(gang("tf-b"))), config=config
    )
    assert len(binds(report, "tf-a", at=0.0)) == 4
    assert [b["time"] for b in binds(report, "tf-b")] == [600.0] * 4
    assert (start_time(report, "tf-a"), start_time(report, "tf-b")) == (0.0, 600.0)
    assert (job_phase(report, "tf-a"), job_phase(report, "tf-b")) == ("Completed", "Completed")


def test_waiting_gang_condition_names_the_gang_and_the_nodes() -> None:
    report = run_scenario(
        cluster=FOUR_GPUS, workload=workload(arrival(gang("tf-a")), arrival(gang("tf-b"))), config=NO_ENQUEUE
    )
    assert unschedulable_messages(report, "tf-b") == [
        "4/4 tasks in gang unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    ]
    assert unschedulable_messages(report, "tf-a") == []


@pytest.mark.parametrize("config", CONFIGS)
def test_gang_larger_than_the_cluster_binds_no_pod(config: dict[str, Any] | None) -> None:
    report = run_scenario(cluster=FOUR_GPUS, workload=workload(arrival(gang("big", workers=5))), config=config)
    assert binds(report, "big") == []
    assert job_phase(report, "big") == "Pending"
    assert unschedulable_messages(report, "big"), "the podgroup must say why it waits"


def test_gang_that_cannot_fit_says_how_many_of_its_tasks_wait() -> None:
    report = run_scenario(cluster=FOUR_GPUS, workload=workload(arrival(gang("big", workers=5))), config=NO_ENQUEUE)
    assert unschedulable_messages(report, "big") == [
        "5/5 tasks in gang unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    ]
    assert all(p["node"] == "" for p in pods_of(report, "big"))


def test_elastic_job_starts_with_its_minimum_and_grows_later() -> None:
    """minAvailable 2 of 4 replicas (task minAvailable defaults to replicas, which must not bind here)."""
    report = run_scenario(
        cluster=FOUR_GPUS,
        workload=workload(
            arrival(gang("rigid", workers=2), duration=1000),
            arrival(vcjob("elastic", tasks=[task(replicas=4)], min_available=2), at=5, duration=100),
        ),
    )
    assert len(binds(report, "elastic", at=5.0)) == 2
    assert start_time(report, "elastic") == 5.0
    assert len(binds(report, "elastic", at=105.0)) == 2
