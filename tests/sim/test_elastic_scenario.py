"""An elastic job in the simulator grows into idle GPUs, shrinks when a gang needs them, grows back.

The real control plane (controller, the shipped policies' scheduler) on the fake executor: the
speed-up model is `speedup.py`'s, so the times below are computed from its rates by hand."""

from __future__ import annotations

import pytest

from caldera.core import objects as o
from caldera.scheduler.policies import load_policy
from caldera.scheduler.scheduler import Scheduler
from caldera.sim.engine import Simulation
from caldera.sim.inputs import Cluster, JobArrival, Workload
from caldera.sim.report import build
from caldera.sim.speedup import Speedup
from caldera.sim.traces import Elastic, gang_job
from caldera.testing.builders import make_node

R4 = Speedup(2, 1024.0).rate(4, 1)  # 1.8817: four workers of a job measured on two, in one node
WORK = 10_000.0  # a's work: seconds on its 2 GPUs


def run(policy: str) -> tuple[Simulation, dict[str, dict[str, object]]]:
    node = make_node("node-0", resources={"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "4"})
    a = gang_job("a", "default", 2, checkpoint=0.0, elastic=Elastic(1, 4, "medium"))
    b = gang_job("b", "default", 2, checkpoint=0.0)
    arrivals = (JobArrival(0.0, a, WORK), JobArrival(1000.0, b, 500.0))
    sim = Simulation(Cluster((node,), (), ()), Workload(arrivals), Scheduler(load_policy(policy)))
    sim.run()
    return sim, {str(row["name"]): row for row in build(sim)["jobs"]}


@pytest.mark.parametrize("policy", ["caldera-default", "las"])
def test_an_elastic_job_grows_shrinks_and_grows_back(policy: str) -> None:
    """a (1 to 4 workers) takes all 4 GPUs at 0 (rate 1.8817); at 1000 it has had 4,000 GPU-seconds (las
    level 1) when b (2 GPUs, 500 s, level 0) arrives and takes two of a's workers above its minimum: a goes
    on on 2 (rate 1) from 1000 × 1.8817 done; b runs 1000 to 1500; a's two workers come back at 1500
    and it ends at 1500 + (10,000 − 1,881.7 − 500) / 1.8817 = 5548.6, against 10,000 on its 2 GPUs."""
    sim, jobs = run(policy)
    assert jobs["b"]["startTime"] == pytest.approx(1000.0)
    assert jobs["b"]["endTime"] == pytest.approx(1500.0)
    done = 1000.0 * R4 + 500.0
    assert jobs["a"]["endTime"] == pytest.approx(1500.0 + (WORK - done) / R4)
    assert sim.work_report("default/a").preemptions == 1
    assert sim.work_report("default/b").preemptions == 0


def test_without_preemption_the_gang_waits_for_the_elastic_job() -> None:
    """gang-fifo-backfill never preempts: a keeps its 4 workers and ends at 10,000 / 1.8817 = 5314.3; b then."""
    _, jobs = run("gang-fifo-backfill")
    assert jobs["a"]["endTime"] == pytest.approx(WORK / R4)
    assert jobs["b"]["startTime"] == pytest.approx(WORK / R4)


def test_a_queue_s_lent_workers_do_not_count_against_its_share() -> None:
    """8 GPUs, three queues of weight 1. a (queue q1, elastic 1 to 4, arrives at 900) and b (q2, elastic 1 to 4,
    from 0) hold 4 GPUs each. At 1000 c (q1, 2 GPUs) and d (q3, 4 GPUs) arrive: each queue deserves 8/3 GPUs.
    a is at las level 0 as c is, so c cannot take a's workers; q1 holds 4 GPUs, above its share, but 3 of them
    are a's lent workers: counting them out, q1 is within its share and c reclaims 2 of b's (level 1) workers,
    while d's gang of 4 cannot be made whole from what q2 may give."""
    node = make_node("node-0", resources={"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"})
    queues = tuple(o.Queue(o.ObjectMeta(name=q, namespace="")) for q in ("q1", "q2", "q3"))
    arrivals = (
        JobArrival(0.0, gang_job("b", "q2", 2, checkpoint=0.0, elastic=Elastic(1, 4, "medium")), WORK),
        JobArrival(900.0, gang_job("a", "q1", 2, checkpoint=0.0, elastic=Elastic(1, 4, "medium")), WORK),
        JobArrival(1000.0, gang_job("c", "q1", 2, checkpoint=0.0), 500.0),
        JobArrival(1000.0, gang_job("d", "q3", 4, checkpoint=0.0), 500.0),
    )
    sim = Simulation(Cluster((node,), queues, ()), Workload(arrivals), Scheduler(load_policy("caldera-default")))
    sim.run()
    jobs = {str(row["name"]): row for row in build(sim)["jobs"]}
    assert jobs["c"]["startTime"] == pytest.approx(1000.0)  # counting a's lent workers, it would wait to 1712.5
    by_c = [e.object for e in sim.plane.events if e.kind == "Reclaim" and e.message.endswith("by default/c")]
    assert sorted(by_c) == ["b-worker-2", "b-worker-3"]  # lent workers go first: the highest indexes
    # d waits until a reaches level 1 (3,250 GPU-seconds on 4 GPUs from 900) and gives it its workers too.
    assert jobs["d"]["startTime"] == pytest.approx(900.0 + 3250.0 / 4)
