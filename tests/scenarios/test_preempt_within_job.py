"""Volcano's second preempt phase: a starving job's waiting task evicts lower-priority tasks of its own job."""

from __future__ import annotations

from caldera.core import objects as o
from caldera.scheduler.config import parse_config
from caldera.scheduler.scheduler import Scheduler
from caldera.scheduler.state import ClusterState
from caldera.testing.builders import make_node, make_pod, make_podgroup

PREEMPT = """
actions: "allocate, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
"""


def state_with(ps_priority: int, *, other_job: bool = False) -> ClusterState:
    """One node of 2 GPUs held by the job's two workers (priority 10); its ps (1 GPU) waits; the gang
    needs all 3, so the job is starving. With `other_job`, a second job's worker holds the GPUs instead."""
    state = ClusterState()
    state.set_nodes([make_node("n0", resources={"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"})])
    pg = make_podgroup("tf", min_member=3, phase=o.PG_RUNNING)
    state.set_podgroup(pg)
    state.set_pod(make_pod("tf", "ps", 0, priority=ps_priority), pg.key)
    owner = "tf"
    if other_job:
        owner = "other"
        other = make_podgroup("other", min_member=1, phase=o.PG_RUNNING)
        state.set_podgroup(other)
    for i in range(2):
        pod = make_pod(owner, "worker", i, priority=10, node="n0", phase=o.POD_RUNNING)
        state.set_pod(pod, f"default/{owner}" if other_job else pg.key)
    return state


def test_a_waiting_task_evicts_a_lower_priority_task_of_its_own_job() -> None:
    """The ps (priority 1000) takes the GPU of the highest-index worker, and is pipelined there."""
    result = Scheduler(parse_config(PREEMPT, "test")).run_cycle(state_with(1000), now=0.0)
    assert [(e.pod, e.reason) for e in result.evictions] == [("default/tf-worker-1", "Preempt")]
    assert "of the same job" in result.evictions[0].message
    assert [(n.pod, n.node) for n in result.nominations] == [("default/tf-ps-0", "n0")]


def test_not_an_equal_or_higher_priority_task() -> None:
    result = Scheduler(parse_config(PREEMPT, "test")).run_cycle(state_with(10), now=0.0)
    assert result.evictions == []


def test_the_first_phase_still_needs_another_job_of_lower_priority() -> None:
    """Workers of another job of the same PriorityClass (0) are no victims of either phase."""
    result = Scheduler(parse_config(PREEMPT, "test")).run_cycle(state_with(1000, other_job=True), now=0.0)
    assert result.evictions == []
