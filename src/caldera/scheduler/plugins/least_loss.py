"""The set of running jobs whose eviction frees enough GPUs for less lost work than any other set.

Used by the `las` plugin for a job that has waited past `las.max-wait`: rather than
holding GPUs idle for it, it takes the GPUs it lacks from the running jobs that lose
the least. What a job loses is the caller's (`las`: nothing for a job that checkpoints,
since it resumes where it stopped; for one that cannot, the seconds its current
run has lasted, since every earlier run was thrown away already).

The choice is a covering knapsack over whole jobs (a job of fixed size frees all its
GPUs or none): the least lost work, then the fewest GPUs evicted, then the fewest
jobs, exactly, by dynamic programming over GPUs still lacking (at most the gang's
size, so a few thousand steps).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from caldera.scheduler.state import JobInfo

Cost = tuple[float, float, int]  # work lost, GPUs evicted, jobs evicted


@dataclass(frozen=True, slots=True)
class Holder:
    """A running job that could give its GPUs up."""

    job: JobInfo
    gpus: float  # what evicting it frees


def least_loss(
    lacking: float, holders: list[Holder], lost: Callable[[JobInfo], float], budget: float = math.inf
) -> list[JobInfo]:
    """The jobs to evict to free at least `lacking` GPUs at the least cost; [] when none is needed, or no set
    of them frees enough losing at most `budget`."""
    need = math.ceil(lacking - 1e-9)
    if need <= 0:
        return []
    if sum(h.gpus for h in holders) < need - 1e-9:
        return []
    # best[s]: the cheapest set found so far freeing min(its GPUs, need) = s, as (cost, chosen indices)
    best: list[tuple[Cost, tuple[int, ...]] | None] = [None] * (need + 1)
    best[0] = ((0.0, 0.0, 0), ())
    for i, h in enumerate(holders):
        loss = lost(h.job)
        for s in range(need, -1, -1):  # downwards: each job at most once
            here = best[s]
            if here is None or s == need:
                continue
            (c_lost, c_gpus, c_jobs), chosen = here
            to = min(need, s + math.floor(h.gpus + 1e-9))
            cand: tuple[Cost, tuple[int, ...]] = ((c_lost + loss, c_gpus + h.gpus, c_jobs + 1), (*chosen, i))
            cur = best[to]
            if to > s and (cur is None or cand[0] < cur[0]):
                best[to] = cand
    found = best[need]
    return [] if found is None or found[0][0] > budget else [holders[i].job for i in found[1]]
