"""An elastic job in the simulator grows into idle GPUs, shrinks when a gang needs them, grows back.

The real control plane (controller, caldera-default's scheduler) on the fake executor: the
speed-up model is `speedup.py`'s, so the times below are computed from its rates by hand."""

from __future__ import annotations

import pytest

from caldera.scheduler.policies import load_policy
from caldera.scheduler.scheduler import Scheduler
from caldera.sim.engine import Simulation
from caldera.sim.inputs import Cluster, JobArrival, Workload
from caldera.sim.report import build
from caldera.sim.speedup import Speedup
from caldera.sim.traces import Elastic, gang_job
from caldera.testing.builders import make_node

R4 = Speedup(2, 1024.0).rate(4, 1)  # 1.8817: four workers of a job measured on two, in one node


def run(policy: str) -> tuple[Simulation, dict[str, dict[str, object]]]:
    node = make_node("node-0", resources={"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "4"})
    a = gang_job("a", "default", 2, checkpoint=0.0, elastic=Elastic(1, 4, "medium"))
    b = gang_job("b", "default", 2, checkpoint=0.0)
    arrivals = (JobArrival(0.0, a, 100.0), JobArrival(10.0, b, 50.0))
    sim = Simulation(Cluster((node,), (), ()), Workload(arrivals), Scheduler(load_policy(policy)))
    sim.run()
    return sim, {row["name"]: row for row in build(sim)["jobs"]}


def test_an_elastic_job_grows_shrinks_and_grows_back() -> None:
    """a (100 s of work measured on 2 GPUs, 1 to 4 workers) takes all 4 GPUs at 0 (rate 1.8817); b (2 GPUs,
    50 s) arrives at 10 and takes back two of a's lent workers: a goes on on 2 (rate 1) from
    10 × 1.8817 = 18.817 done; b runs 10 to 60; a's two workers come back at 60 (68.817 done) and it ends
    at 60 + 31.183 / 1.8817 = 76.572, against 100 on its fixed 2 GPUs."""
    sim, jobs = run("caldera-default")
    assert jobs["b"]["startTime"] == pytest.approx(10.0)
    assert jobs["b"]["endTime"] == pytest.approx(60.0)
    done60 = 10.0 * R4 + 50.0
    assert jobs["a"]["endTime"] == pytest.approx(60.0 + (100.0 - done60) / R4)
    assert sim.work_report("default/a").preemptions == 1
    assert sim.work_report("default/b").preemptions == 0


def test_without_lending_the_gang_waits_for_the_elastic_job() -> None:
    """las does not take lent workers back (same level, first come first served): b waits until a ends
    at 100 / 1.8817 = 53.143."""
    _, jobs = run("las")
    assert jobs["a"]["endTime"] == pytest.approx(100.0 / R4)
    assert jobs["b"]["startTime"] == pytest.approx(100.0 / R4)
