"""The same inputs and seed give the same report numbers, run after run."""

from __future__ import annotations

import json

from caldera.scheduler.policies import policy_text
from caldera.testing.scenario import arrival, cluster, gpu_nodes, run_scenario, task, vcjob, workload

from . import philly
from .conftest import Run


def test_the_sample_is_the_same_for_the_same_seed_and_not_for_another() -> None:
    draw = philly.sample.__wrapped__
    if not philly.TRACE.exists():
        return
    assert draw(philly.SEED) == draw(philly.SEED)
    assert draw(philly.SEED) != draw(philly.SEED + 1)


def test_a_replay_under_las_gives_the_same_numbers_twice(philly_runs: dict[str, Run]) -> None:
    sim, report = philly.simulate("las")
    first_sim, first = philly_runs["las"]
    assert json.dumps(report, sort_keys=True) == json.dumps(first, sort_keys=True)
    keys = [f"default/{j['name']}" for j in report["jobs"]]
    assert [sim.work_report(k) for k in keys] == [first_sim.work_report(k) for k in keys]


def test_a_deadlocked_fifo_nogang_run_is_the_same_twice() -> None:
    inputs = {
        "cluster": cluster(nodes=[gpu_nodes(count=2, gpus=2)]),
        "workload": workload(*(arrival(vcjob(n, tasks=[task(replicas=4)], min_available=4)) for n in "abc")),
        "config": policy_text("fifo-nogang"),
        "until": 5000,
    }
    assert json.dumps(run_scenario(**inputs)) == json.dumps(run_scenario(**inputs))
