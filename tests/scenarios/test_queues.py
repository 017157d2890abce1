"""Queues: weighted shares, reclaim (and only when reclaimable), capability, guarantee, Closed queues.

Volcano's semantics, on Volcano's plugins (configs.VOLCANO_SHAPE)."""

from __future__ import annotations

from typing import Any

import pytest

from caldera.system import control
from caldera.testing.scenario import (
    arrival,
    cluster,
    events,
    evictions,
    gpu_nodes,
    job_phase,
    jobs_in_queue,
    peak_running,
    pods_of,
    queue,
    run_scenario,
    running_at,
    start_time,
    task,
    vcjob,
    workload,
)

from .configs import VOLCANO_SHAPE

SIX_GPUS = [gpu_nodes(count=3, gpus=2)]


def one_gpu_jobs(prefix: str, count: int, *, queue: str, at: float = 0, duration: float = 1000) -> list[dict[str, Any]]:
    return [arrival(vcjob(f"{prefix}{i}", queue=queue), at=at, duration=duration) for i in range(count)]


def running_in(report: dict[str, Any], queue_name: str, t: float) -> int:
    return sum(len(running_at(report, j, t)) for j in jobs_in_queue(report, queue_name))


def test_weights_split_the_cluster_under_contention() -> None:
    """Weights 1:2 on six GPUs, both queues asking for all six: 1/3 and 2/3."""
    report = run_scenario(
        config=VOLCANO_SHAPE,
        cluster=cluster(nodes=SIX_GPUS, queues=[queue("a", weight=1), queue("b", weight=2)]),
        workload=workload(*one_gpu_jobs("a", 6, queue="a"), *one_gpu_jobs("b", 6, queue="b")),
    )
    assert (running_in(report, "a", 1), running_in(report, "b", 1)) == (2, 4)


@pytest.mark.parametrize("reclaimable", [True, False], ids=["reclaimable", "not-reclaimable"])
def test_queue_above_its_share_gives_back_only_when_reclaimable(reclaimable: bool) -> None:
    """Queue a took the idle cluster; b arrives and deserves half of it."""
    report = run_scenario(
        config=VOLCANO_SHAPE,
        cluster=cluster(nodes=SIX_GPUS, queues=[queue("a", reclaimable=reclaimable), queue("b")]),
        workload=workload(*one_gpu_jobs("a", 6, queue="a"), *one_gpu_jobs("b", 3, queue="b", at=10)),
    )
    reclaimed = evictions(report, reason="Reclaim")
    if reclaimable:
        assert len(reclaimed) == 3
        assert {e["time"] for e in reclaimed} == {10.0}
        assert (running_in(report, "a", 11), running_in(report, "b", 11)) == (3, 3)
    else:
        assert reclaimed == []
        assert (running_in(report, "a", 11), running_in(report, "b", 11)) == (6, 0)
        assert {start_time(report, j) for j in jobs_in_queue(report, "b")} == {1000.0}


def test_reclaim_takes_from_the_queue_above_its_share_not_one_at_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three queues deserve two GPUs each; a holds four, c holds its two. b takes from a only, once.

    Taking from c instead would leave c below its share, and c would take back from b, forever."""
    monkeypatch.setattr(control, "MAX_ROUNDS", 500)  # such a ping-pong then fails fast instead of spinning
    on_first_node = {"kubernetes.io/hostname": "gpu-0"}
    report = run_scenario(
        config=VOLCANO_SHAPE,
        cluster=cluster(nodes=SIX_GPUS, queues=[queue("a"), queue("b"), queue("c")]),
        workload=workload(
            *[arrival(vcjob(f"c{i}", queue="c", tasks=[task(node_selector=on_first_node)])) for i in range(2)],
            *one_gpu_jobs("a", 4, queue="a", at=1),
            *one_gpu_jobs("b", 2, queue="b", at=10),
        ),
        until=100,
    )
    victims = evictions(report)
    assert len(victims) == 2
    assert all(e["object"].startswith("a") and e["reason"] == "Reclaim" for e in victims)
    assert [running_in(report, q, 11) for q in "abc"] == [2, 2, 2]


def test_capability_is_a_hard_cap_even_on_an_idle_cluster() -> None:
    report = run_scenario(
        config=VOLCANO_SHAPE,
        cluster=cluster(nodes=SIX_GPUS, queues=[queue("capped", capability={"nvidia.com/gpu": "2"})]),
        workload=workload(*one_gpu_jobs("j", 4, queue="capped", duration=100)),
    )
    assert peak_running(report, jobs_in_queue(report, "capped")) == 2
    assert [start_time(report, j) for j in jobs_in_queue(report, "capped")] == [0.0, 0.0, 100.0, 100.0]


def test_guarantee_is_kept_for_its_queue() -> None:
    """b floods the cluster but never takes a's two guaranteed GPUs; a's jobs start on arrival, evicting nobody."""
    report = run_scenario(
        config=VOLCANO_SHAPE,
        cluster=cluster(nodes=SIX_GPUS, queues=[queue("a", guarantee={"nvidia.com/gpu": "2"}), queue("b")]),
        workload=workload(*one_gpu_jobs("b", 6, queue="b"), *one_gpu_jobs("a", 2, queue="a", at=10)),
    )
    assert peak_running(report, jobs_in_queue(report, "b")) == 4
    assert {start_time(report, j) for j in jobs_in_queue(report, "a")} == {10.0}
    assert evictions(report) == []


def test_closed_queue_accepts_no_new_job() -> None:
    report = run_scenario(
        config=VOLCANO_SHAPE,
        cluster=cluster(nodes=SIX_GPUS, queues=[queue("shut", state="Closed")]),
        workload=workload(arrival(vcjob("late", queue="shut"))),
    )
    assert job_phase(report, "late") == "Rejected"
    assert pods_of(report, "late") == []
    [rejected] = events(report, "Rejected", obj="late")
    assert "Closed" in rejected["message"]
