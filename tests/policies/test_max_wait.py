"""las.max-wait, hand-computed timelines: a job that has waited past the bound takes the GPUs it lacks from
the running jobs that lose the least work (while its wait covers that loss), whatever their levels and las.max-loss; once overdue, a job is
never a victim of las's levels afterwards. And the covering knapsack that picks the victims."""

from __future__ import annotations

from typing import Any, cast

import pytest

from caldera.core import objects as o
from caldera.scheduler.plugins.least_loss import Holder, least_loss
from caldera.scheduler.policies import load_policy, policy_text
from caldera.scheduler.scheduler import Scheduler
from caldera.scheduler.state import ClusterState, JobInfo
from caldera.sim.engine import CHECKPOINT_INTERVAL
from caldera.testing.builders import make_node, make_pod, make_podgroup
from caldera.testing.scenario import (
    arrival,
    cluster,
    evictions,
    gpu_nodes,
    job_row,
    run_scenario,
    start_time,
    task,
    vcjob,
    workload,
)

DEFAULT = policy_text("caldera-default")
GPU = "nvidia.com/gpu"
LOSSLESS = {CHECKPOINT_INTERVAL: "0"}


def with_max_wait(wait: str | None) -> str:
    """caldera-default with `las.max-wait` set to `wait` (None: removed, if the policy sets it)."""
    lines = [line for line in DEFAULT.splitlines() if "las.max-wait" not in line]
    text = "\n".join(lines) + "\n"
    if wait is None:
        return text
    anchor = "      las.max-loss: 0"
    assert text.count(anchor) == 1
    return text.replace(anchor, f"      las.max-wait: {wait}\n{anchor}")


def two_long_jobs(wait: str | None) -> dict[str, Any]:
    """8 GPUs, one queue, nothing checkpoints. a (4 GPUs, 10,000 s) starts at 0, b (4 GPUs, 10,000 s) at
    1,000; big (4 GPUs, 1,000 s) arrives at 2,000 and finds nothing free. a and b have run past both levels
    and cannot checkpoint: las.max-loss 0 spares them from las's levels."""
    return run_scenario(
        cluster=cluster(nodes=[gpu_nodes(count=1, gpus=8)]),
        workload=workload(
            arrival(vcjob("a", tasks=[task(replicas=4)]), duration=10_000),
            arrival(vcjob("b", tasks=[task(replicas=4)]), at=1000, duration=10_000),
            arrival(vcjob("big", tasks=[task(replicas=4)]), at=2000, duration=1000),
        ),
        config=with_max_wait(wait),
    )


def test_without_a_bound_the_job_waits_for_a_running_job_to_end() -> None:
    report = two_long_jobs(None)
    assert not evictions(report)
    assert start_time(report, "big") == 10_000.0


def test_an_overdue_job_takes_nothing_whose_loss_its_gain_does_not_cover() -> None:
    """Bound 1 h: big is overdue at 5,600, having waited 3,600 s: it gains about as long again. b, the
    cheaper victim, would lose its 4,600 s run, and at any later time t loses t − 1,000 against big's
    t − 2,000: never covered. big waits for a (10,000)."""
    report = two_long_jobs("1h")
    assert not evictions(report)
    assert start_time(report, "big") == 10_000.0


def backfilled(wait: str | None, big_checkpoints: bool = False, late: bool = False) -> dict[str, Any]:
    """12 GPUs, one queue, nothing checkpoints but (optionally) big. q (4 GPUs, 20,000 s), x (4 GPUs,
    1,100 s) and y (4 GPUs, 3,000 s) start at 0; big (8 GPUs, 1,000 s) arrives at 1,000 and cannot fit; r
    (4 GPUs, 20,000 s) arrives at 1,050 and starts at 1,100 on x's GPUs, as big still cannot fit (the pattern
    of the trace study's no-checkpoint seed 5); y's 4 GPUs stay idle from 3,000. With late, c (4 GPUs,
    100 s) arrives at 5,100."""
    jobs = [
        arrival(vcjob("q", tasks=[task(replicas=4)]), duration=20_000),
        arrival(vcjob("x", tasks=[task(replicas=4)]), duration=1100),
        arrival(vcjob("y", tasks=[task(replicas=4)]), duration=3000),
        arrival(
            vcjob("big", tasks=[task(replicas=8)], annotations=LOSSLESS if big_checkpoints else None),
            at=1000,
            duration=1000,
        ),
        arrival(vcjob("r", tasks=[task(replicas=4)]), at=1050, duration=20_000),
    ]
    if late:
        jobs.append(arrival(vcjob("c", tasks=[task(replicas=4)]), at=5100, duration=100))
    return run_scenario(
        cluster=cluster(nodes=[gpu_nodes(count=1, gpus=12)]), workload=workload(*jobs), config=with_max_wait(wait)
    )


def test_without_a_bound_the_gang_waits_for_a_long_job_to_end() -> None:
    """q ends at 20,000: with y's 4 idle GPUs, big fits then."""
    report = backfilled(None)
    assert not evictions(report)
    assert start_time(report, "big") == 20_000.0


def test_an_overdue_gang_preempts_the_job_that_loses_the_least() -> None:
    """Bound 1 h: big is overdue at 4,600, having waited 3,600 s; 4 GPUs are idle, it lacks 4 more. q would
    lose its 4,600 s run, r its 3,500 s: r, which big's wait covers. big runs 4,600-5,600; r starts over
    at 5,600 and ends at 25,600; q ends at 20,000."""
    report = backfilled("1h")
    assert [e["time"] for e in evictions(report)] == [4600.0] * 4
    assert len(evictions(report, "r")) == 4
    assert start_time(report, "big") == 4600.0
    assert job_row(report, "big")["endTime"] == 5600.0
    assert job_row(report, "r")["endTime"] == 25_600.0
    assert job_row(report, "q")["endTime"] == 20_000.0


def test_before_its_bound_a_gang_preempts_nothing() -> None:
    """Bound 6 h: big would be overdue at 22,600, after q ends (20,000): it never is, and waits as before."""
    report = backfilled("6h")
    assert not evictions(report)
    assert start_time(report, "big") == 20_000.0


def test_an_overdue_job_is_not_a_victim_of_las_levels_afterwards() -> None:
    """big checkpoints; started at 4,600 on 8 GPUs it passes 3,250 GPU-seconds (level 1) at 5,006.25. c
    arrives at 5,100 at level 0 and would take its GPUs (it checkpoints) had big not waited past its bound.
    It does not: at 5,600 big ends and c and r start on its 8 GPUs."""
    report = backfilled("1h", big_checkpoints=True, late=True)
    assert not evictions(report, "big")
    assert start_time(report, "c") == 5600.0
    assert job_row(report, "r")["endTime"] == 25_600.0


def test_control_without_a_bound_a_level_0_job_takes_the_gpus_of_a_checkpointing_one() -> None:
    """The control for the test above: big (checkpointing, 4 GPUs) has run 900 s × 4 = 3,600 GPU-seconds,
    past 3,250 (level 1), when c (level 0) arrives; big never waited, so c takes its GPUs at 900."""
    report = run_scenario(
        cluster=cluster(nodes=[gpu_nodes(count=1, gpus=4)]),
        workload=workload(
            arrival(vcjob("big", tasks=[task(replicas=4)], annotations=LOSSLESS), duration=1000),
            arrival(vcjob("c", tasks=[task(replicas=4)]), at=900, duration=100),
        ),
        config=with_max_wait(None),
    )
    assert [e["time"] for e in evictions(report, "big")] == [900.0] * 4
    assert start_time(report, "c") == 900.0


def overdue_across_queues() -> tuple[ClusterState, float]:
    """8 GPUs, queues q1 and q2 of equal weight (4 GPUs deserved each: q1 asks 4, q2 6). Nothing checkpoints.
    q1 runs small (2 GPUs, since -100); q2 runs r2 (4 GPUs, since 0) and r1 (2 GPUs, since 9 h - 100 s).
    big (q1, 2 GPUs) has waited since 0: at 9 h it is overdue (8 h), and nothing is free."""
    now = 9 * 3600.0
    state = ClusterState()
    state.set_nodes([make_node("n0", resources={"cpu": "64", "memory": "256Gi", GPU: "8"})])
    for q in ("q1", "q2"):
        state.set_queue(o.Queue(o.ObjectMeta(name=q, namespace="")))
    for name, queue, gpus, since in (("small", "q1", 2, -100.0), ("r1", "q2", 2, now - 100), ("r2", "q2", 4, 0.0)):
        pg = make_podgroup(name, queue=queue, min_member=gpus, phase=o.PG_RUNNING, created=since)
        state.set_podgroup(pg)
        for i in range(gpus):
            pod = make_pod(name, "w", i, node="n0", phase=o.POD_RUNNING, requests={GPU: "1"}, created=since)
            pod.status.start_time = since
            state.set_pod(pod, pg.key)
    pg = make_podgroup("big", queue="q1", min_member=2, phase=o.PG_INQUEUE, created=0.0)
    state.set_podgroup(pg)
    for i in range(2):
        state.set_pod(make_pod("big", "w", i, requests={GPU: "1"}), pg.key)
    return state, now


def test_an_overdue_job_that_preempt_cannot_help_reclaims_from_another_queue() -> None:
    """Preempt looks first, at q1's own running job: small would lose its 9 h 100 s run, more than big's 9 h
    wait covers, so nothing. Reclaim then looks at q2, 2 GPUs above its share: r1 loses its 100 s run, which
    big's wait covers, so r1 is reclaimed and big placed on its GPUs. (The victims las chose for preempt
    were once kept for reclaim too: none, and big waited for r2 to end.)"""
    state, now = overdue_across_queues()
    result = Scheduler(load_policy("caldera-default")).run_cycle(state, now)
    assert sorted(e.pod for e in result.evictions) == ["default/r1-w-0", "default/r1-w-1"]
    assert {e.reason for e in result.evictions} == {"Reclaim"}
    assert sorted(b.pod for b in result.nominations) == ["default/big-w-0", "default/big-w-1"]


@pytest.mark.parametrize("bad", ["soon", "-5m"], ids=["not-a-duration", "negative"])
def test_a_bad_bound_is_named(bad: str) -> None:
    with pytest.raises(ValueError, match=r"plugin las: las\.max-wait must"):
        backfilled(bad)


# ------------------------------------------------------------ the knapsack


def _job(name: str) -> JobInfo:
    return cast(JobInfo, name)  # least_loss only hands jobs to `lost` and back


LOSS = {"ckpt8": 0.0, "run4a": 400.0, "run4b": 300.0, "run2": 250.0, "run1": 100.0}


def _pick(lacking: float, *held: tuple[str, float]) -> list[str]:
    holders = [Holder(_job(n), g) for n, g in held]
    return sorted(cast(str, j) for j in least_loss(lacking, holders, lambda j: LOSS[cast(str, j)]))


def test_least_loss_prefers_a_checkpointing_job_whatever_its_size() -> None:
    assert _pick(4, ("run4b", 4), ("ckpt8", 8)) == ["ckpt8"]


def test_least_loss_takes_two_small_jobs_when_they_lose_less_than_one_big_one() -> None:
    """4 GPUs: run4a loses 400, run2 + run1 (3 GPUs, not enough) 350, run4b 300: run4b."""
    assert _pick(4, ("run4a", 4), ("run2", 2), ("run1", 1), ("run4b", 4)) == ["run4b"]
    # 3 GPUs: run2 + run1 lose 350, run4b 300 though it frees 4: run4b (the least loss first).
    assert _pick(3, ("run2", 2), ("run1", 1), ("run4b", 4)) == ["run4b"]
    # 3 GPUs without run4b: run2 + run1 (350) against run4a (400).
    assert _pick(3, ("run2", 2), ("run1", 1), ("run4a", 4)) == ["run1", "run2"]


def test_least_loss_evicts_nothing_when_nothing_lacks_or_nothing_is_enough() -> None:
    assert _pick(0, ("run1", 1)) == []
    assert _pick(4, ("run2", 2), ("run1", 1)) == []


def test_least_loss_takes_nothing_over_its_budget() -> None:
    holders = [Holder(_job("run2"), 2), Holder(_job("run1"), 1)]
    assert least_loss(3, holders, lambda j: LOSS[cast(str, j)], budget=349.0) == []
    assert len(least_loss(3, holders, lambda j: LOSS[cast(str, j)], budget=350.0)) == 2


def test_caldera_default_bounds_waits_at_8_hours() -> None:
    """The bound caldera-default ships (docs/policies.md: the trace study's tightest sample needs < 9.03 h)."""
    assert "las.max-wait: 8h" in DEFAULT
    assert "las.max-wait" not in with_max_wait(None)
