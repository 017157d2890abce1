"""A discarded statement leaves the cluster state and every plugin's running totals as they were."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from caldera.core import objects as o
from caldera.scheduler.plugins.drf import DRF
from caldera.scheduler.plugins.registry import registry
from caldera.scheduler.policies import load_policy
from caldera.scheduler.session import Session
from caldera.scheduler.state import ClusterState, TaskInfo, TaskStatus
from caldera.scheduler.statement import Statement
from caldera.testing.builders import make_node, make_pod, make_podgroup

NODE = {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4", "pods": "110"}


def cluster_with_two_jobs() -> ClusterState:
    """`busy` runs two 1-GPU pods on n0; `waiting` has three pending ones."""
    state = ClusterState()
    state.set_nodes([make_node(f"n{i}", resources=NODE) for i in range(2)])
    busy = state.set_podgroup(make_podgroup("busy", min_member=2, phase=o.PG_RUNNING))
    for i in range(2):
        state.set_pod(make_pod("busy", "worker", i, node="n0", phase=o.POD_RUNNING), busy.key)
    waiting = state.set_podgroup(make_podgroup("waiting", min_member=3, created=1.0))
    for i in range(3):
        state.set_pod(make_pod("waiting", "worker", i, created=1.0), waiting.key)
    return state


def task(state: ClusterState, job: str, index: int) -> TaskInfo:
    return state.tasks[f"default/{job}-worker-{index}"]


Ops = Callable[[Statement, ClusterState], None]


def allocate_two(stmt: Statement, state: ClusterState) -> None:
    stmt.allocate(task(state, "waiting", 0), 1)
    stmt.allocate(task(state, "waiting", 1), 1)


def evict_one(stmt: Statement, state: ClusterState) -> None:
    stmt.evict(task(state, "busy", 1), "Preempt", "preempted by default/waiting")


def evict_then_allocate_and_pipeline(stmt: Statement, state: ClusterState) -> None:
    evict_one(stmt, state)
    allocate_two(stmt, state)
    stmt.pipeline(task(state, "waiting", 2), 0)


@pytest.mark.parametrize(
    "ops", [allocate_two, evict_one, evict_then_allocate_and_pipeline], ids=["allocate", "evict", "mixed"]
)
def test_discard_restores_state_and_drf_shares(ops: Ops) -> None:
    state = cluster_with_two_jobs()
    ssn = Session(state, load_policy("volcano-default"), now=10.0, registry=registry())
    drf = ssn.plugin("drf")
    assert isinstance(drf, DRF)
    jobs = [state.jobs["default/busy"], state.jobs["default/waiting"]]
    shares = [drf.share(j) for j in jobs]
    assert shares == [pytest.approx(2 / 8), 0.0]
    used, queue_alloc = state.used.copy(), state.queue("default").allocated.copy()
    statuses = {k: (t.status, t.node) for k, t in state.tasks.items()}

    stmt = Statement(ssn)
    ops(stmt, state)
    state.check_invariants()
    during = [drf.share(j) for j in jobs]
    assert during != shares, "the operations must have moved the shares for this test to mean anything"
    assert during == [drf.share_of(j.allocated) for j in jobs]

    stmt.discard()
    state.check_invariants()
    assert [drf.share(j) for j in jobs] == shares
    assert {k: (t.status, t.node) for k, t in state.tasks.items()} == statuses
    assert np.array_equal(state.used, used)
    assert np.array_equal(state.queue("default").allocated, queue_alloc)
    assert not state.nominated.any() and not state.releasing.any()


def test_commit_after_discard_starts_from_the_restored_state() -> None:
    state = cluster_with_two_jobs()
    ssn = Session(state, load_policy("volcano-default"), now=10.0, registry=registry())
    first = Statement(ssn)
    evict_then_allocate_and_pipeline(first, state)
    first.discard()
    second = Statement(ssn)
    allocate_two(second, state)
    second.commit()
    state.check_invariants()
    assert [(b.pod, b.node) for b in ssn.result.binds] == [
        ("default/waiting-worker-0", "n1"),
        ("default/waiting-worker-1", "n1"),
    ]
    assert ssn.result.evictions == []
    assert task(state, "busy", 1).status is TaskStatus.RUNNING
