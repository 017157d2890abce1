"""nodeorder: kube-scheduler's resource scores, weighted (`leastrequested.weight`, `mostrequested.weight`,
`balancedresource.weight`), over CPU and memory as kube-scheduler scores them; 0..100 each."""

from __future__ import annotations

import numpy as np

from caldera.core.resources import CPU, MEMORY
from caldera.scheduler.framework import Indices, Plugin, Scores
from caldera.scheduler.state import TaskInfo

MAX_SCORE = 100.0


class NodeOrder(Plugin):
    name = "nodeorder"

    def node_order(self, task: TaskInfo, nodes: Indices) -> Scores | None:
        least = self.arg_float("leastrequested.weight", 1.0)
        most = self.arg_float("mostrequested.weight", 0.0)
        balanced = self.arg_float("balancedresource.weight", 1.0)
        state = self.ssn.state
        fractions = []
        for name in (CPU, MEMORY):
            d = state.dim.get(name)
            if d is None:
                continue
            alloc = state.alloc[d, nodes]
            after = state.used[d, nodes] + task.req[d]
            fractions.append(np.divide(after, alloc, out=np.ones_like(alloc), where=alloc > 0))
        if not fractions:
            return None
        frac = np.clip(np.vstack(fractions), 0.0, 1.0)
        score = np.zeros(len(nodes))
        if least:
            score += least * (1.0 - frac.mean(axis=0)) * MAX_SCORE
        if most:
            score += most * frac.mean(axis=0) * MAX_SCORE
        if balanced and len(fractions) > 1:
            score += balanced * (1.0 - frac.std(axis=0)) * MAX_SCORE
        return score
