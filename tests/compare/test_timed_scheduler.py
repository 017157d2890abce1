"""Measuring the scheduler does not change what it decides; the comparison's numbers match the report's."""

from __future__ import annotations

import pytest

from caldera.scheduler.config import default_config
from caldera.scheduler.scheduler import Scheduler
from caldera.sim.compare import TimedScheduler, available_policies, load_policy, measure
from caldera.sim.engine import Simulation
from caldera.sim.inputs import load
from caldera.sim.report import build, collect
from caldera.sim.sources import Inputs

from .kit import BUSY


def inputs() -> Inputs:
    cluster, workload = load(str(BUSY[1]), str(BUSY[3]))
    return Inputs(cluster, workload, "busy", "busy", "all")


def test_timing_changes_nothing_and_counts_cycles() -> None:
    seen: list[float] = []
    timed = TimedScheduler(default_config(), on_cycle=seen.append)
    i = inputs()
    plain_sim = Simulation(i.cluster, i.workload, Scheduler(default_config()))
    timed_sim = Simulation(i.cluster, i.workload, timed)
    plain_sim.run()
    timed_sim.run()
    assert build(plain_sim) == build(timed_sim)
    assert timed.cycles == len(seen) > 0 and timed.cpu_seconds >= 0
    assert seen == sorted(seen)  # cycles follow the virtual clock


def test_the_metrics_agree_with_the_reports_summary() -> None:
    i = inputs()
    sim = Simulation(i.cluster, i.workload, Scheduler(default_config()))
    sim.run()
    summary = build(sim)["summary"]
    run = measure("default", collect(sim), i, {}, 1, 0.0, 0.0)
    assert run.avg_jct == pytest.approx(summary["avgJCT"])
    assert run.p99_jct == summary["p99JCT"]
    assert run.avg_queue_delay == pytest.approx(summary["avgQueueDelay"])
    assert run.makespan == summary["makespan"]
    assert run.gpu_utilisation == pytest.approx(summary["gpuUtilization"], abs=1e-6)


def test_policies_resolve_by_name_or_file(tmp_path) -> None:
    assert "caldera-default" in available_policies()
    assert load_policy("caldera-default")[0] == "caldera-default"
    path = tmp_path / "mine.yaml"
    path.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n')
    label, config = load_policy(str(path))
    assert label == "mine" and config.actions == ("enqueue", "allocate")
