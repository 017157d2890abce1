"""The cluster state's invariant, checked from scratch: every running total equals the sum over its tasks."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from caldera.scheduler.info import ALLOCATED, OCCUPYING, TaskStatus

if TYPE_CHECKING:
    from caldera.scheduler.state import ClusterState


def check_invariants(state: ClusterState) -> None:
    """Recompute every total from the tasks; raise AssertionError on any drift (for tests)."""
    used = np.zeros_like(state.used)
    releasing = np.zeros_like(state.used)
    nominated = np.zeros_like(state.used)
    for t in state.tasks.values():
        if t.status in OCCUPYING:
            used[:, t.node] += t.req
        if t.status is TaskStatus.RELEASING:
            releasing[:, t.node] += t.req
        if t.status is TaskStatus.PIPELINED:
            nominated[:, t.node] += t.req
    assert np.allclose(used, state.used), "node used drifted"
    assert np.allclose(releasing, state.releasing), "node releasing drifted"
    assert np.allclose(nominated, state.nominated), "node nominated drifted"
    for j in state.jobs.values():
        alloc = sum((t.req for t in j.tasks.values() if t.status in ALLOCATED), np.zeros(len(state.resources)))
        assert np.allclose(alloc, j.allocated), f"job {j.key} allocated drifted"
    for q in state.queues.values():
        jobs = [j for j in state.jobs.values() if j.queue == q.name]
        alloc = sum((j.allocated for j in jobs), np.zeros(len(state.resources)))
        assert np.allclose(alloc, q.allocated), f"queue {q.name} allocated drifted"
    request = sum((q.request for q in state.queues.values()), np.zeros(len(state.resources)))
    assert np.allclose(request, state.request_total), "the queues' total request drifted"
