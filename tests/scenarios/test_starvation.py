"""No starvation: a large gang in a steady stream of small jobs starts within a bound when `sla` is on."""

from __future__ import annotations

from typing import Any

from caldera.testing.scenario import arrival, cluster, gpu_nodes, run_scenario, start_time, task, vcjob, workload

from .configs import VOLCANO_SHAPE, with_sla

EIGHT_GPUS = cluster(nodes=[gpu_nodes(count=2, gpus=4)])
SMALL_EVERY, SMALL_RUNS, STREAM_ENDS = 5.0, 40.0, 800.0  # about eight 1-GPU jobs in flight: the cluster stays full
BIG_ARRIVES, SLA_WAIT = 100.0, 60.0
# Once its waiting time is over, the gang goes first and keeps what it gets; the small jobs running then
# finish within SMALL_RUNS, so it is running by then.
BOUND = BIG_ARRIVES + SLA_WAIT + SMALL_RUNS


def stream_with_big_gang() -> dict[str, Any]:
    smalls = [
        arrival(vcjob(f"small-{i:03d}"), at=i * SMALL_EVERY, duration=SMALL_RUNS)
        for i in range(int(STREAM_ENDS / SMALL_EVERY))
    ]
    big = arrival(vcjob("big", tasks=[task(replicas=8)], min_available=8), at=BIG_ARRIVES, duration=100)
    return workload(*smalls, big)


def test_big_gang_starts_within_the_sla_bound() -> None:
    report = run_scenario(cluster=EIGHT_GPUS, workload=stream_with_big_gang(), config=with_sla(f"{SLA_WAIT:g}s"))
    started = start_time(report, "big")
    assert started is not None
    assert BIG_ARRIVES + SLA_WAIT <= started <= BOUND


def test_without_sla_the_big_gang_waits_for_the_stream_to_dry_up() -> None:
    """The contrast: the same stream without sla keeps eight GPUs from ever being free together."""
    report = run_scenario(cluster=EIGHT_GPUS, workload=stream_with_big_gang(), config=VOLCANO_SHAPE)
    started = start_time(report, "big")
    assert started is not None
    assert started > STREAM_ENDS
