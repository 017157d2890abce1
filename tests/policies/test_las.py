"""las: least attained service first, preemptive, levels moving with time, starving jobs promoted."""

from __future__ import annotations

from statistics import mean
from typing import Any

import pytest

from caldera.scheduler.policies import policy_text
from caldera.sim.engine import CHECKPOINT_INTERVAL
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

from . import philly
from .conftest import Run

ONE_GPU = cluster(nodes=[gpu_nodes(count=1, gpus=1)], priority_classes={"high": 1000})
LOSSLESS = {CHECKPOINT_INTERVAL: "0"}


def las(*arrivals: dict[str, Any], knob: float | None = None, limits: str = "[3600]") -> dict[str, Any]:
    """las with one threshold at 3,600 GPU-seconds (two levels: the scenarios' arithmetic stays short)."""
    config = policy_text("las").replace("las.queue-limits: [3250, 7200]", f"las.queue-limits: {limits}")
    if knob is not None:
        config = config.replace("las.promote-knob: 8", f"las.promote-knob: {knob}")
    return run_scenario(cluster=ONE_GPU, workload=workload(*arrivals), config=config)


def test_a_job_past_the_threshold_is_preempted_when_it_crosses_it_with_no_event_then() -> None:
    """a has run 1000 s when b arrives: both under 1 GPU-hour, b waits. At 3600 a crosses into level 1."""
    report = las(
        arrival(vcjob("a", annotations=LOSSLESS), duration=10_000),
        arrival(vcjob("b", annotations=LOSSLESS), at=1000, duration=10_000),
    )
    [evicted] = evictions(report, "a", reason="Preempt")
    assert evicted["time"] == 3600.0
    assert start_time(report, "b") == 3600.0
    assert job_row(report, "b")["endTime"] == 13_600.0  # b crossed too at 7200: equals do not preempt
    assert job_row(report, "a")["endTime"] == 20_000.0  # 6400 s left, lossless checkpoint


def test_a_new_job_preempts_a_long_running_one_at_once() -> None:
    report = las(
        arrival(vcjob("long", annotations=LOSSLESS), duration=10_000),
        arrival(vcjob("short"), at=5000, duration=100),
    )
    assert start_time(report, "short") == 5000.0
    assert job_row(report, "long")["endTime"] == 10_100.0


def test_a_higher_priority_class_is_never_evicted() -> None:
    report = las(
        arrival(vcjob("vip", priority_class="high"), duration=10_000),
        arrival(vcjob("short"), at=5000, duration=100),
    )
    assert not evictions(report)
    assert start_time(report, "short") == 10_000.0


@pytest.mark.parametrize(("knob", "promoted_at"), [(1, 10_800.0), (2, 14_400.0)])
def test_a_starving_job_is_promoted_after_knob_times_its_last_run(knob: float, promoted_at: float) -> None:
    """a gets the GPU when b0 ends at 3600, runs 3600 s and is preempted by the fresh b at 7200 (a is past
    the threshold, b under it). knob × 3600 s later a is back at level 0 and takes the GPU from b, which
    by then has run past the threshold itself."""
    report = las(
        arrival(vcjob("b0", annotations=LOSSLESS), duration=3600),  # a's turn comes when b0 ends
        arrival(vcjob("a", annotations=LOSSLESS), at=1, duration=20_000),
        arrival(vcjob("b", annotations=LOSSLESS), at=3601, duration=50_000),
        knob=knob,
    )
    assert [e["time"] for e in evictions(report, "a")][:1] == [7200.0]
    assert [e["time"] for e in evictions(report, "b")][:1] == [promoted_at]
    assert {j["phase"] for j in report["jobs"]} == {"Completed"}


def test_promotion_weighs_the_whole_wait_against_the_whole_run_since_the_last_promotion() -> None:
    """Tiresias' rule. On 2 GPUs, a (1 GPU) runs 0-3600 (level 1 at 3,600 GPU-s), is preempted by the
    2-GPU b, runs again 4600-5000 and is preempted by the 2-GPU c: 4,000 s run, epoch 0. With knob 1 it
    is due at 0 + 2 × 4000 = 8000 (a rule that looks at the last run alone, 400 s, would promote it at
    5400 and let it preempt c as soon as c reaches level 1 at 6800)."""
    two = [task(gpus=2)]
    report = run_scenario(
        cluster=cluster(nodes=[gpu_nodes(count=1, gpus=2)]),
        workload=workload(
            arrival(vcjob("a", annotations=LOSSLESS), duration=20_000),
            arrival(vcjob("b", tasks=two, annotations=LOSSLESS), at=3000, duration=1000),
            arrival(vcjob("c", tasks=two, annotations=LOSSLESS), at=5000, duration=50_000),
        ),
        config=policy_text("las")
        .replace("las.queue-limits: [3250, 7200]", "las.queue-limits: [3600]")
        .replace("las.promote-knob: 8", "las.promote-knob: 1"),
    )
    assert [e["time"] for e in evictions(report, "a")][:2] == [3600.0, 5000.0]
    assert [e["time"] for e in evictions(report, "c")][:1] == [8000.0]


def test_max_loss_is_a_budget_over_the_whole_life_of_a_job_that_cannot_checkpoint() -> None:
    """las.max-loss 1,500, one level at 1,000. long (no checkpoint) is preempted at 1200 by a (lost 1,200)
    and at 1400 by b (lost 100 more: 1,300). Restarted at 1500, it has lost 1,500 by 1800 when c arrives:
    its current run is worth only 300, but a third stop would take its losses past the budget."""
    config = (
        policy_text("las")
        .replace("las.queue-limits: [3250, 7200]", "las.queue-limits: [1000]")
        .replace("      las.promote-knob: 8", "      las.max-loss: 1500\n      las.promote-knob: 8")
    )
    report = run_scenario(
        cluster=ONE_GPU,
        workload=workload(
            arrival(vcjob("long"), duration=10_000),
            arrival(vcjob("a"), at=1200, duration=100),
            arrival(vcjob("b"), at=1400, duration=100),
            arrival(vcjob("c"), at=1800, duration=100),
        ),
        config=config,
    )
    assert [e["time"] for e in evictions(report, "long")] == [1200.0, 1400.0]
    assert job_row(report, "long")["endTime"] == 11_500.0  # started over at 1500
    assert start_time(report, "c") == 11_500.0


# ---------------------------------------------------------------- the Philly sample


def jcts(report: dict[str, Any]) -> list[float]:
    return [j["endTime"] - j["submitTime"] for j in report["jobs"]]


def test_las_lowers_average_jct_against_volcano_default(philly_runs: dict[str, Run]) -> None:
    volcano = mean(jcts(philly_runs["volcano-default"][1]))
    tiresias = mean(jcts(philly_runs["las"][1]))
    assert tiresias < 0.8 * volcano, (tiresias, volcano)


def test_las_finishes_every_job(philly_runs: dict[str, Run]) -> None:
    sim, report = philly_runs["las"]
    assert len(report["jobs"]) == philly.JOBS
    assert {j["phase"] for j in report["jobs"]} == {"Completed"}
    preemptions = sum(sim.work_report(f"default/{j['name']}").preemptions for j in report["jobs"])
    assert preemptions > 0, "las got its way by preempting"
