"""proportion.borrow: the workers an elastic job runs above its minAvailable are lent, reclaimable whatever its
queue's share (a gang's minimum before anyone's extra workers)."""

from __future__ import annotations

import pytest

from caldera.core import objects as o
from caldera.scheduler.plugins import proportion
from caldera.scheduler.plugins.proportion import reclaim_victims, surplus
from caldera.scheduler.plugins.registry import registry
from caldera.scheduler.policies import load_policy
from caldera.scheduler.scheduler import Scheduler
from caldera.scheduler.session import Session
from caldera.scheduler.state import ClusterState, JobInfo, TaskInfo
from caldera.testing.builders import make_node, make_pod, make_podgroup

GPU = "nvidia.com/gpu"


def elastic_within_its_share() -> tuple[Session, list[TaskInfo]]:
    """q1's elastic job e runs 4 one-GPU workers with minAvailable 1; q1 deserves exactly what it holds."""
    state = ClusterState()
    state.set_nodes([make_node("n0", resources={"cpu": "64", "memory": "256Gi", GPU: "8"})])
    state.set_queue(o.Queue(o.ObjectMeta(name="q1", namespace="")))
    pg = make_podgroup("e", queue="q1", min_member=1, phase=o.PG_RUNNING)
    state.set_podgroup(pg)
    for i in range(4):
        state.set_pod(make_pod("e", "w", i, node="n0", phase=o.POD_RUNNING, requests={GPU: "1"}), pg.key)
    ssn = Session(state, load_policy("caldera-default"), 0.0, registry())
    return ssn, sorted(state.jobs[pg.key].tasks.values(), key=lambda t: t.index)


def test_the_tasks_above_min_available_are_the_highest_indexes() -> None:
    _, tasks = elastic_within_its_share()
    assert [t.index for t in surplus(tasks[0].job)] == [3, 2, 1]


def test_a_queue_within_its_share_keeps_its_gang_but_lends_its_extra_workers() -> None:
    ssn, tasks = elastic_within_its_share()
    deserved = {"q1": ssn.state.queues["q1"].allocated.copy()}
    assert reclaim_victims(ssn, deserved, tasks) == []  # within its share: nothing, as Volcano's proportion
    lent = reclaim_victims(ssn, deserved, tasks, lent=True)
    assert sorted(t.index for t in lent) == [1, 2, 3]  # worker 0 is e's minimum: never lent


def test_what_a_queue_lends_is_looked_for_only_in_jobs_that_can_run_above_their_minimum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """reclaim asks `preemptive` for every starving job; counting what the queue lent used to pass over every job
    then, so a full cluster with many waiting jobs made each cycle quadratic (the embedded daemon under a burst
    of single-pod jobs whose starts lagged: its CPU per submission tripled). Only a job with more tasks than its
    minAvailable can lend; the others are not looked at, and the answer is the same."""
    state = ClusterState()
    state.set_nodes([make_node("n0", resources={"cpu": "4", "memory": "64Gi", GPU: "8"})])
    pg = make_podgroup("e", min_member=1, phase=o.PG_RUNNING)
    state.set_podgroup(pg)
    for i in range(2):  # the elastic job: one worker above its minimum, lent
        state.set_pod(make_pod("e", "w", i, node="n0", phase=o.POD_RUNNING, requests={"cpu": "1"}), pg.key)
    for name, phase in [(f"run{i}", o.PG_RUNNING) for i in range(20)] + [(f"wait{i}", o.PG_INQUEUE) for i in range(5)]:
        pg = make_podgroup(name, min_member=1, phase=phase)
        state.set_podgroup(pg)
        running = phase == o.PG_RUNNING
        pod = make_pod(
            name,
            "w",
            0,
            node="n0" if running else "",
            phase=o.POD_RUNNING if running else o.POD_PENDING,
            requests={"cpu": "100m"},
        )
        state.set_pod(pod, pg.key)
    asked: list[str] = []
    real = proportion.surplus

    def counted(job: JobInfo) -> list[TaskInfo]:
        asked.append(job.key)
        return real(job)

    monkeypatch.setattr(proportion, "surplus", counted)
    result = Scheduler(load_policy("caldera-default")).run_cycle(state, 0.0)
    assert not result.binds  # the node is full: the waiting jobs starve and reclaim asks for each of them
    assert asked and set(asked) == {"default/e"}
