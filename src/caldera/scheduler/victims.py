"""Choosing victims for preempt and reclaim without breaking gangs for nothing.

A victim job can give up either (a) its pods above minAvailable, one at a time
("safe": the job keeps running), or (b) all of its pods at once (the whole gang
stops and is re-admitted later). Never a gang left below its minimum. For one
task, every node that passes the predicates is costed: the fewest whole gangs
stopped first, then the fewest pods evicted, then the lowest victim priority;
the cheapest node wins. Whole gangs are used only when no safe choice exists.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from caldera.scheduler.session import Session
from caldera.scheduler.state import ALLOCATED, READY, JobInfo, TaskInfo, Vector


@dataclass(frozen=True, slots=True)
class Plan:
    node: int
    victims: tuple[TaskInfo, ...]  # every task to evict (whole gangs include their pods on other nodes)
    cost: tuple[int, int, int]


def plan_eviction(ssn: Session, task: TaskInfo, candidates: list[TaskInfo]) -> Plan | None:
    """The cheapest node and victims that make room for `task`, or None."""
    state = ssn.state
    static = state.schedulable.copy()
    for r in ssn.static_rejections(task):
        static &= r.mask
    allowed = {id(c) for c in candidates}
    by_node: dict[int, list[TaskInfo]] = {}
    for c in candidates:
        if c.node >= 0 and static[c.node] and c.status in ALLOCATED:
            by_node.setdefault(c.node, []).append(c)
    future = ssn.free(True)
    best: Plan | None = None
    for node in sorted(by_node):
        plan = _plan_node(ssn, task, node, by_node[node], future[:, node], allowed)
        if plan is not None and (best is None or plan.cost < best.cost):
            best = plan
    return best


def _plan_node(
    ssn: Session, task: TaskInfo, node: int, here: list[TaskInfo], free: Vector, allowed: set[int]
) -> Plan | None:
    need0 = task.req - free
    if np.all(need0 <= 0):
        return Plan(node, (), (0, 0, 0))
    need = need0
    # Victims in the order we would rather lose them: lowest priority first, then the newest, then the
    # highest index (Volcano's reversed task order; rank 0 of a job is often its coordinator).
    here = sorted(here, key=lambda t: (t.job.priority, t.priority, -t.creation, -t.index, t.key))
    chosen: list[TaskInfo] = []
    spare: dict[str, int] = {}
    for v in here:  # (a) pods above their gang's minimum
        left = spare.setdefault(v.job.key, _excess(v.job))
        if left <= 0:
            continue
        spare[v.job.key] = left - 1
        chosen.append(v)
        need = need - v.req
        if np.all(need <= 0):
            return Plan(node, tuple(chosen), (0, len(chosen), max(c.job.priority for c in chosen)))
    # (b) whole gangs, counted afresh: the safe pods above were not enough on their own.
    need, chosen, gangs = need0, [], 0
    taken: set[int] = set()
    for job in _jobs_by_preference(here):
        members = [t for t in job.tasks.values() if t.status in ALLOCATED]
        if any(id(t) not in allowed for t in members):
            continue  # some of its pods may not be evicted, so the gang cannot go as a whole
        gangs += 1
        for t in members:
            if id(t) not in taken:
                chosen.append(t)
                taken.add(id(t))
                if t.node == node:
                    need = need - t.req
        if np.all(need <= 0):
            return Plan(node, tuple(chosen), (gangs, len(chosen), max(c.job.priority for c in chosen)))
    return None


def _excess(job: JobInfo) -> int:
    return max(job.count(READY) - job.min_available, 0)


def _jobs_by_preference(here: list[TaskInfo]) -> list[JobInfo]:
    jobs: dict[str, JobInfo] = {}
    for t in here:
        jobs.setdefault(t.job.key, t.job)
    return sorted(jobs.values(), key=lambda j: (j.priority, len(j.tasks), -j.creation, j.key))
