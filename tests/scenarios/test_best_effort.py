"""Gangs that mix BestEffort pods (no requests: a tf parameter server, an MPI launcher) with pods that request.

BestEffort pods are placed by backfill, after allocate has placed (and committed) the pods that
request; a gang counts its pending BestEffort pods as ready, per task as well (Volcano's
`CheckTaskReady`), or a gang such as `submit tf --ps 1 --workers 2 --gpus 1` would never start.
"""

from __future__ import annotations

from typing import Any

import pytest

from caldera.testing.scenario import (
    arrival,
    binds,
    cluster,
    evictions,
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

# Volcano's plugins with and without enqueue, and the built-in configuration (caldera-default)
CONFIGS = [
    pytest.param(VOLCANO_SHAPE, id="volcano-shape"),
    pytest.param(NO_ENQUEUE, id="no-enqueue"),
    pytest.param(None, id="default"),
]
SIX_GPUS = cluster(nodes=[gpu_nodes(count=3, gpus=2)], priority_classes={"high": 1000, "low": 10})


def best_effort(name: str, replicas: int = 1, **kw: Any) -> dict[str, Any]:
    return task(name, replicas=replicas, gpus=0, cpu=None, memory=None, **kw)


def gpu(name: str, replicas: int, **kw: Any) -> dict[str, Any]:
    return task(name, replicas=replicas, gpus=1, **kw)


def cpu_only(name: str, replicas: int = 1) -> dict[str, Any]:
    return task(name, replicas=replicas, gpus=0, cpu="100m", memory=None)


# Every way BestEffort and requesting pods share one gang (minAvailable = all pods, each task's minimum its replicas).
GANGS = [
    pytest.param([best_effort("ps"), gpu("worker", 2)], id="tf-ps-best-effort-then-gpu-workers"),
    pytest.param([best_effort("launcher"), gpu("worker", 2)], id="mpi-launcher-best-effort"),
    pytest.param([gpu("worker", 2), best_effort("ps", 2)], id="gpu-workers-then-best-effort-servers"),
    pytest.param([best_effort("ps"), cpu_only("chief"), gpu("worker", 2)], id="best-effort-cpu-and-gpu"),
    pytest.param([best_effort("ps"), best_effort("worker", 2)], id="all-best-effort"),
    pytest.param([cpu_only("ps"), gpu("worker", 2)], id="no-best-effort"),
]


def total_pods(tasks: list[dict[str, Any]]) -> int:
    return sum(int(t["replicas"]) for t in tasks)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("tasks", GANGS)
def test_mixed_gang_starts_whole_on_an_empty_cluster(
    tasks: list[dict[str, Any]], config: dict[str, Any] | None
) -> None:
    n = total_pods(tasks)
    report = run_scenario(
        cluster=SIX_GPUS,
        workload=workload(arrival(vcjob("mix", tasks=tasks, min_available=n), duration=60)),
        config=config,
    )
    assert len(binds(report, "mix", at=0.0)) == n
    assert start_time(report, "mix") == 0.0
    assert job_phase(report, "mix") == "Completed"


@pytest.mark.parametrize("config", CONFIGS)
def test_best_effort_pods_do_not_start_without_the_rest_of_their_gang(config: dict[str, Any] | None) -> None:
    """Seven GPUs asked of six: neither the workers nor the BestEffort server run, and the gang says why."""
    tasks = [best_effort("ps"), gpu("worker", 7)]
    report = run_scenario(
        cluster=SIX_GPUS, workload=workload(arrival(vcjob("big", tasks=tasks, min_available=8))), config=config
    )
    assert binds(report, "big") == []
    assert all(p["node"] == "" for p in pods_of(report, "big"))
    assert job_phase(report, "big") == "Pending"
    assert unschedulable_messages(report, "big") or config is None  # with enqueue it is never admitted


@pytest.mark.parametrize("config", CONFIGS)
def test_mixed_gang_waits_for_gpus_then_starts_whole(config: dict[str, Any] | None) -> None:
    """A running gang holds four of six GPUs; the mixed gang wanting four starts, whole, when it ends."""
    report = run_scenario(
        cluster=SIX_GPUS,
        workload=workload(
            arrival(vcjob("first", tasks=[gpu("worker", 4)], min_available=4), duration=100),
            arrival(vcjob("mix", tasks=[best_effort("ps"), gpu("worker", 4)], min_available=5), at=1, duration=50),
        ),
        config=config,
    )
    assert binds(report, "mix", at=1.0) == []
    assert len(binds(report, "mix", at=100.0)) == 5
    assert job_phase(report, "mix") == "Completed"


def test_elastic_gang_with_best_effort_pods_starts_at_its_minimum() -> None:
    """minAvailable below the pods' sum: per-task minimums do not bind, the BestEffort pod counts once placed."""
    tasks = [best_effort("ps"), gpu("worker", 8)]
    report = run_scenario(
        cluster=SIX_GPUS, workload=workload(arrival(vcjob("el", tasks=tasks, min_available=3), duration=60))
    )
    assert len(binds(report, "el", at=0.0)) == 7  # the server and six of the eight workers
    assert job_phase(report, "el") == "Completed"


def test_best_effort_task_minimum_below_its_replicas() -> None:
    """Task minAvailable 1 of 2 servers: the gang needs one server and both workers."""
    tasks = [best_effort("ps", 2, min_available=1), gpu("worker", 2)]
    report = run_scenario(
        cluster=SIX_GPUS, workload=workload(arrival(vcjob("mix", tasks=tasks, min_available=3), duration=60))
    )
    assert len(binds(report, "mix", at=0.0)) == 4
    assert job_phase(report, "mix") == "Completed"


@pytest.mark.parametrize("config", CONFIGS)
def test_high_priority_mixed_gang_preempts(config: dict[str, Any] | None) -> None:
    """Its GPU workers are pipelined onto what the victims release; its BestEffort server counts for the gang."""
    report = run_scenario(
        cluster=SIX_GPUS,
        workload=workload(
            arrival(vcjob("low", tasks=[gpu("worker", 6)], min_available=6, priority_class="low"), duration=1000),
            arrival(
                vcjob("high", tasks=[best_effort("ps"), gpu("worker", 2)], min_available=3, priority_class="high"),
                at=10,
                duration=100,
            ),
        ),
        config=config,
    )
    assert {e["time"] for e in evictions(report, "low", reason="Preempt")} == {10.0}
    assert start_time(report, "high") == 10.0
    assert len(binds(report, "high", at=10.0)) == 3
