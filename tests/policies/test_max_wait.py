"""las.max-wait, hand-computed timelines: a job that has waited past the bound takes the GPUs it lacks from
the running jobs that lose the least work, whatever their levels and las.max-loss; once overdue, a job is
never a victim of las's levels afterwards. And the covering knapsack that picks the victims."""

from __future__ import annotations

from typing import Any, cast

import pytest

from caldera.scheduler.plugins.least_loss import Holder, least_loss
from caldera.scheduler.policies import policy_text
from caldera.scheduler.state import JobInfo
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

DEFAULT = policy_text("caldera-default")
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


def two_long_jobs(wait: str | None, big_checkpoints: bool = False, late: bool = False) -> dict[str, Any]:
    """8 GPUs, one queue, nothing checkpoints but (optionally) big. a (4 GPUs, 10,000 s) starts at 0, b
    (4 GPUs, 10,000 s) at 1,000; big (4 GPUs, 1,000 s) arrives at 2,000 and finds nothing free. a and b
    have run past both levels and cannot checkpoint: las.max-loss 0 spares them. With late, c (4 GPUs,
    100 s, level 0) arrives at 6,000 while big runs."""
    jobs = [
        arrival(vcjob("a", tasks=[task(replicas=4)]), duration=10_000),
        arrival(vcjob("b", tasks=[task(replicas=4)]), at=1000, duration=10_000),
        arrival(
            vcjob("big", tasks=[task(replicas=4)], annotations=LOSSLESS if big_checkpoints else None),
            at=2000,
            duration=1000,
        ),
    ]
    if late:
        jobs.append(arrival(vcjob("c", tasks=[task(replicas=4)]), at=6000, duration=100))
    return run_scenario(
        cluster=cluster(nodes=[gpu_nodes(count=1, gpus=8)]), workload=workload(*jobs), config=with_max_wait(wait)
    )


def test_without_a_bound_the_job_waits_for_a_running_job_to_end() -> None:
    report = two_long_jobs(None)
    assert not evictions(report)
    assert start_time(report, "big") == 10_000.0


def test_an_overdue_job_preempts_the_running_job_that_loses_the_least() -> None:
    """Bound 1 h: big is overdue at 2,000 + 3,600 = 5,600. a would lose 4 × 5,600 GPU-seconds, b 4 × 4,600:
    b is evicted, big runs 5,600-6,600, b starts over at 6,600 and ends at 16,600; a ends at 10,000."""
    report = two_long_jobs("1h")
    assert [e["time"] for e in evictions(report, "b")] == [5600.0] * 4
    assert not evictions(report, "a")
    assert start_time(report, "big") == 5600.0
    assert job_row(report, "big")["endTime"] == 6600.0
    assert job_row(report, "b")["endTime"] == 16_600.0
    assert job_row(report, "a")["endTime"] == 10_000.0


def test_before_its_bound_a_job_preempts_nothing() -> None:
    """Bound 3 h: big would be overdue at 12,800, after a ends (10,000): it never is, and waits as before."""
    report = two_long_jobs("3h")
    assert not evictions(report)
    assert start_time(report, "big") == 10_000.0


def test_an_overdue_job_is_not_a_victim_of_las_levels_afterwards() -> None:
    """big checkpoints and has run 400 s × 4 GPUs = 1,600 GPU-seconds at 6,000 (past 3,250 only at 6,412):
    c arrives at 6,000 at level 0 but big is level 0 too; by 6,412 big is level 1 and c, level 0, would take
    it (it checkpoints) if big had not waited past its bound. It does not: c starts when big ends (6,600), b
    (level 2, preempted at 5,600) after c (6,700)."""
    report = two_long_jobs("1h", big_checkpoints=True, late=True)
    assert not evictions(report, "big")
    assert start_time(report, "c") == 6600.0
    assert job_row(report, "b")["endTime"] == 16_700.0


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


@pytest.mark.parametrize("bad", ["soon", "-5m"], ids=["not-a-duration", "negative"])
def test_a_bad_bound_is_named(bad: str) -> None:
    with pytest.raises(ValueError, match=r"plugin las: las\.max-wait must"):
        two_long_jobs(bad)


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
