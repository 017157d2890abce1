"""srtf, the oracle: short jobs overtake a long one, which fifo makes them wait behind."""

from __future__ import annotations

from statistics import mean
from typing import Any

import pytest

from caldera.scheduler.policies import policy_text
from caldera.sim.engine import CHECKPOINT_INTERVAL
from caldera.testing.scenario import arrival, cluster, evictions, gpu_nodes, job_row, run_scenario, vcjob, workload

ONE_GPU = cluster(nodes=[gpu_nodes(count=1, gpus=1)])
LONG_THEN_SHORT = workload(
    arrival(vcjob("long", annotations={CHECKPOINT_INTERVAL: "0"}), duration=1000),
    arrival(vcjob("short-1"), at=1, duration=10),
    arrival(vcjob("short-2"), at=2, duration=10),
)


def ends(report: dict[str, Any]) -> dict[str, float]:
    return {j["name"]: j["endTime"] for j in report["jobs"]}


def avg_jct(report: dict[str, Any]) -> float:
    return mean(j["endTime"] - j["submitTime"] for j in report["jobs"])


@pytest.mark.parametrize("fifo", ["fifo-nogang", "volcano-default"])
def test_srtf_beats_fifo_on_a_long_job_followed_by_short_ones(fifo: str) -> None:
    first_come = run_scenario(cluster=ONE_GPU, workload=LONG_THEN_SHORT, config=policy_text(fifo))
    oracle = run_scenario(cluster=ONE_GPU, workload=LONG_THEN_SHORT, config=policy_text("srtf"))
    assert ends(first_come) == {"long": 1000.0, "short-1": 1010.0, "short-2": 1020.0}
    assert ends(oracle) == {"long": 1020.0, "short-1": 11.0, "short-2": 21.0}  # long resumes with 999 s left
    assert avg_jct(oracle) < avg_jct(first_come) / 2


def test_srtf_preempts_only_for_strictly_less_remaining_time() -> None:
    report = run_scenario(cluster=ONE_GPU, workload=LONG_THEN_SHORT, config=policy_text("srtf"))
    assert [e["object"] for e in evictions(report)] == ["long-worker-0"], "short-2 (10 s) waits for short-1 (9 s)"
    assert job_row(report, "long")["startTime"] == 0.0
