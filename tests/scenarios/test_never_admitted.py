"""A gang enqueue refuses says whether it is for now or for ever (its PodGroup's NotEnqueued condition)."""

from __future__ import annotations

from caldera.testing.scenario import (
    arrival,
    cluster,
    gpu_nodes,
    queue,
    run_scenario,
    task,
    unschedulable_messages,
    vcjob,
    workload,
)

from .configs import VOLCANO_SHAPE

SIX_GPUS = [gpu_nodes(count=3, gpus=2)]


def test_a_minimum_above_the_queues_capability_or_the_cluster_is_never_admitted() -> None:
    report = run_scenario(
        config=VOLCANO_SHAPE,
        cluster=cluster(nodes=SIX_GPUS, queues=[queue("small", capability={"nvidia.com/gpu": "2"})]),
        workload=workload(
            arrival(vcjob("big", tasks=[task(replicas=4)], queue="small")),
            arrival(vcjob("wide", tasks=[task(replicas=7)])),
        ),
    )
    assert unschedulable_messages(report, "big") == [
        "queue small's capability can never hold the job's minimum (nvidia.com/gpu 4)"
    ]
    assert unschedulable_messages(report, "wide") == ["the cluster can never hold the job's minimum (nvidia.com/gpu 7)"]


def test_a_full_queue_admits_the_job_later() -> None:
    report = run_scenario(
        config=VOLCANO_SHAPE,
        cluster=cluster(nodes=SIX_GPUS, queues=[queue("small", capability={"nvidia.com/gpu": "4"})]),
        workload=workload(
            arrival(vcjob("first", tasks=[task(replicas=4)], queue="small"), duration=100),
            arrival(vcjob("second", tasks=[task(replicas=2)], queue="small"), at=1, duration=100),
        ),
    )
    assert unschedulable_messages(report, "second") == [
        "queue small cannot admit the job now (its share or the cluster is full)"
    ]
