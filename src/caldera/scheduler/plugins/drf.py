"""drf: order jobs by dominant resource share, lowest first; evict only towards a fairer split.

A job's share is max over resources of allocated / cluster total. Shares are
kept per job and updated by the statement's allocate and deallocate events, so
a discarded statement leaves them as they were.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import cast

import numpy as np

from caldera.scheduler.framework import Plugin
from caldera.scheduler.session import Session
from caldera.scheduler.state import ClusterState, JobInfo, TaskInfo, Vector

_EPS = 1e-6


def _inverse_total(state: ClusterState) -> list[float]:
    """1 / the cluster's total per resource, 0 for pods and what no node has (kept until a node changes)."""
    key = (state.node_version, len(state.resources))
    found = state.derived.get("drf.inverse")
    if found is None or found[0] != key:
        total = state.total.copy()
        total[state.dim["pods"]] = 0.0  # pod slots are not a resource anyone competes for
        found = (key, np.divide(1.0, total, out=np.zeros_like(total), where=total > 0).tolist())
        state.derived["drf.inverse"] = found
    return cast(list[float], found[1])


class DRF(Plugin):
    name = "drf"

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        super().__init__(ssn, args)
        self._inv: list[float] | None = None  # 1 / cluster total per resource (0: pods, and what no node has)
        self.shares: dict[str, float] = {}

    def share_of(self, allocated: Vector) -> float:
        if self._inv is None:
            self._inv = _inverse_total(self.ssn.state)
        # Python floats over a handful of dimensions: numpy's products and max, without its per-call cost.
        return max(map(operator.mul, allocated.tolist(), self._inv), default=0.0)

    def share(self, job: JobInfo) -> float:
        s = self.shares.get(job.key)
        if s is None:
            s = self.shares[job.key] = self.share_of(job.allocated)
        return s

    def job_order(self, job: JobInfo) -> tuple[object, ...]:
        return (self.share(job),)

    def on_allocate(self, task: TaskInfo) -> None:
        self.shares[task.job.key] = self.share_of(task.job.allocated)

    def on_deallocate(self, task: TaskInfo) -> None:
        self.shares[task.job.key] = self.share_of(task.job.allocated)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        mine = self.share_of(preemptor.job.allocated + preemptor.req)
        removed: dict[str, Vector] = {}
        victims = []
        for c in candidates:
            if c.job is preemptor.job:
                victims.append(c)
                continue
            left = c.job.allocated - removed.get(c.job.key, 0.0) - c.req
            theirs = self.share_of(left)
            if mine < theirs or abs(mine - theirs) <= _EPS:
                victims.append(c)
                removed[c.job.key] = removed.get(c.job.key, 0.0) + c.req
        return victims

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self.preemptable(reclaimer, candidates)
