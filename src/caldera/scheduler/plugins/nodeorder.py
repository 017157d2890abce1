"""nodeorder: kube-scheduler's resource scores, weighted (`leastrequested.weight`, `mostrequested.weight`,
`balancedresource.weight`), over CPU and memory as kube-scheduler scores them; 0..100 each.

Per node, f_r = (used_r + req_r) / allocatable_r clipped to [0, 1] for r in CPU, memory;
least = 1 − mean(f), most = mean(f), balanced = 1 − std(f) (population std), each × 100 × weight.
With two resources the mean and std are written out with the very operations numpy's mean and
std perform on two rows (sum, divide by 2; squared deviations, sum, divide by 2, square root),
so the scores are the same to the last bit, without numpy's per-call overhead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import numpy as np

from caldera.core.resources import CPU, MEMORY
from caldera.scheduler.framework import Indices, Plugin, Scores
from caldera.scheduler.session import Session
from caldera.scheduler.state import ClusterState, TaskInfo, Vector

MAX_SCORE = 100.0


class NodeOrder(Plugin):
    name = "nodeorder"
    local_scores = True  # used and allocatable of the node, the task's request

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        super().__init__(ssn, args)
        self.least, self.most, self.balanced = self.settings(
            lambda p: (
                p.arg_float("leastrequested.weight", 1.0),
                p.arg_float("mostrequested.weight", 0.0),
                p.arg_float("balancedresource.weight", 1.0),
            )
        )

    def node_order(self, task: TaskInfo, nodes: Indices) -> Scores | None:
        state = self.ssn.state
        dims = [d for d in (state.dim.get(CPU), state.dim.get(MEMORY)) if d is not None]
        if not dims:
            return None
        # A node's score depends only on its CPU and memory (used, allocatable) and the task's request for them:
        # scores for every node are kept per request until one of those changes (on replays of GPU-only jobs,
        # never), and a call picks its candidates out of them.
        version = (state.node_version, len(state.resources), *(state.used_version[d] for d in dims))
        cached = state.derived.get("nodeorder")
        if cached is None or cached[0] != version:
            cached = (version, {})
            state.derived["nodeorder"] = cached
        by_request = cast(dict[tuple[float, ...], Scores], cached[1])
        key = (self.least, self.most, self.balanced, *(float(task.req[d]) for d in dims))
        full = by_request.get(key)
        if full is None:
            if len(nodes) * 4 < len(state.node_names):  # a few nodes (placement.py catching up): just them
                return self._scores(state, dims, task, nodes)
            full = by_request[key] = self._scores(state, dims, task, None)
        return full[nodes]

    def _scores(self, state: ClusterState, dims: list[int], task: TaskInfo, nodes: Indices | None) -> Scores:
        """The score for `task` of `nodes` (None: every node); elementwise, so each node's is what scoring
        it alone gives."""
        fractions: list[Vector] = []
        for d in dims:
            alloc = state.alloc[d] if nodes is None else state.alloc[d, nodes]
            after = (state.used[d] if nodes is None else state.used[d, nodes]) + task.req[d]
            f = np.divide(after, alloc, out=np.ones_like(alloc), where=alloc > 0)
            fractions.append(np.clip(f, 0.0, 1.0, out=f))
        least, most, balanced = self.least, self.most, self.balanced
        if len(fractions) == 1:
            mean = fractions[0] / 1.0
            std = None
        else:
            f0, f1 = fractions
            mean = (f0 + f1) / 2.0
            d0, d1 = f0 - mean, f1 - mean
            std = np.sqrt((d0 * d0 + d1 * d1) / 2.0) if balanced else None
        score: Scores | None = None
        if least:
            score = least * (1.0 - mean) * MAX_SCORE
        if most:
            s = most * mean * MAX_SCORE
            score = s if score is None else score + s
        if balanced and std is not None:
            s = balanced * (1.0 - std) * MAX_SCORE
            score = s if score is None else score + s
        return score if score is not None else np.zeros(len(fractions[0]))
