"""Priority and preemption within a queue: gang-aware victims, never upwards, never between equals."""

from __future__ import annotations

from typing import Any

import pytest

from caldera.testing.scenario import (
    arrival,
    binds,
    cluster,
    evictions,
    gpu_nodes,
    pods_of,
    run_scenario,
    running_at,
    start_time,
    task,
    vcjob,
    workload,
)

from .configs import NO_ENQUEUE, VOLCANO_SHAPE

PRIORITIES = {"high": 1000, "low": 10}
FOUR_GPUS = cluster(nodes=[gpu_nodes(count=2, gpus=2)], priority_classes=PRIORITIES)
# Volcano's plugins with and without enqueue, and the built-in configuration (caldera-default)
CONFIGS = [
    pytest.param(VOLCANO_SHAPE, id="volcano-shape"),
    pytest.param(NO_ENQUEUE, id="no-enqueue"),
    pytest.param(None, id="default"),
]


def job(name: str, *, replicas: int, min_available: int, priority: str) -> dict[str, Any]:
    return vcjob(name, tasks=[task(replicas=replicas)], min_available=min_available, priority_class=priority)


def below_minimum_ever(report: dict[str, Any], name: str, min_available: int) -> bool:
    """Whether the job ever ran with some pods but fewer than its minimum (a broken gang)."""
    times = {p["startTime"] for p in pods_of(report, name) if p["startTime"] is not None}
    times |= {p["endTime"] for p in pods_of(report, name) if p["endTime"] is not None}
    return any(0 < len(running_at(report, name, t)) < min_available for t in times)


@pytest.mark.parametrize("config", CONFIGS)
def test_high_priority_gang_preempts_a_whole_low_gang(config: dict[str, Any] | None) -> None:
    """The rigid low gang has no pod above its minimum: it goes as a whole, not two pods of four."""
    report = run_scenario(
        cluster=FOUR_GPUS,
        workload=workload(
            arrival(job("low", replicas=4, min_available=4, priority="low"), duration=1000),
            arrival(job("high", replicas=2, min_available=2, priority="high"), at=10, duration=100),
        ),
        config=config,
    )
    evicted = evictions(report, "low", reason="Preempt")
    assert sorted(e["object"] for e in evicted) == [f"low-worker-{i}" for i in range(4)]
    assert {e["time"] for e in evicted} == {10.0}
    assert all(e["message"] == "preempted by default/high" for e in evicted)
    assert start_time(report, "high") == 10.0
    assert not below_minimum_ever(report, "low", 4)
    assert len(binds(report, "low", at=110.0)) == 4, "the low gang comes back once the high job is done"


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("order", [("rigid", "elastic"), ("elastic", "rigid")], ids=["rigid-first", "elastic-first"])
def test_pods_above_an_elastic_minimum_go_before_any_gang_is_broken(
    order: tuple[str, str], config: dict[str, Any] | None
) -> None:
    shapes = {"rigid": (2, 2), "elastic": (2, 1)}  # (replicas, minAvailable)
    arrivals = [
        arrival(job(n, replicas=shapes[n][0], min_available=shapes[n][1], priority="low"), at=i, duration=1000)
        for i, n in enumerate(order)
    ]
    arrivals.append(arrival(job("high", replicas=1, min_available=1, priority="high"), at=10, duration=100))
    report = run_scenario(cluster=FOUR_GPUS, workload=workload(*arrivals), config=config)
    assert [e["object"] for e in evictions(report)] == ["elastic-worker-1"]
    assert start_time(report, "high") == 10.0
    assert len(running_at(report, "rigid", 50.0)) == 2
    assert len(running_at(report, "elastic", 50.0)) == 1


@pytest.mark.parametrize("config", CONFIGS)
def test_fewest_whole_gangs_are_stopped(config: dict[str, Any] | None) -> None:
    """Two rigid low gangs of two: one GPU is needed, so exactly one gang stops, entirely."""
    report = run_scenario(
        config=config,
        cluster=FOUR_GPUS,
        workload=workload(
            arrival(job("low-a", replicas=2, min_available=2, priority="low"), duration=1000),
            arrival(job("low-b", replicas=2, min_available=2, priority="low"), at=1, duration=1000),
            arrival(job("high", replicas=1, min_available=1, priority="high"), at=10, duration=100),
        ),
    )
    by_job = {name: len(evictions(report, name)) for name in ("low-a", "low-b")}
    assert sorted(by_job.values()) == [0, 2]
    assert not below_minimum_ever(report, "low-a", 2)
    assert not below_minimum_ever(report, "low-b", 2)
    assert start_time(report, "high") == 10.0


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize(
    ("running", "arriving"), [("high", "low"), ("low", "low")], ids=["lower-never-preempts-higher", "equal-never"]
)
def test_no_preemption_unless_strictly_higher(running: str, arriving: str, config: dict[str, Any] | None) -> None:
    report = run_scenario(
        cluster=FOUR_GPUS,
        workload=workload(
            arrival(job("first", replicas=4, min_available=4, priority=running), duration=500),
            arrival(job("second", replicas=2, min_available=2, priority=arriving), at=10, duration=100),
        ),
        config=config,
    )
    assert evictions(report) == []
    assert start_time(report, "second") == 500.0
