"""binpack: prefer the nodes that are fullest after placement, so whole nodes stay free for big gangs.

score = Σ_r w_r · (used_r + req_r) / allocatable_r ÷ Σ w_r × 100 × `binpack.weight`, over the
resources the task requests. Weights: `binpack.cpu` (1), `binpack.memory` (1), and for each
resource listed in `binpack.resources` (default `nvidia.com/gpu`), `binpack.resources.<name>` (1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import numpy as np

from caldera.core.resources import CPU, GPU, MEMORY
from caldera.scheduler.framework import Indices, Plugin, Scores
from caldera.scheduler.session import Session
from caldera.scheduler.state import ClusterState, TaskInfo

MAX_SCORE = 100.0


class Binpack(Plugin):
    name = "binpack"
    local_scores = True  # used and allocatable of the node, the task's request

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        super().__init__(ssn, args)
        self._weights, self.weight = self.settings(lambda p: (self.weights(), self.arg_float("binpack.weight", 1.0)))

    def weights(self) -> dict[str, float]:
        out = {CPU: self.arg_float("binpack.cpu", 1.0), MEMORY: self.arg_float("binpack.memory", 1.0)}
        listed = self.args.get("binpack.resources", GPU)
        for name in str(listed).split(","):
            name = name.strip()
            if name:
                out[name] = self.arg_float(f"binpack.resources.{name}", 1.0)
        return out

    def node_order(self, task: TaskInfo, nodes: Indices) -> Scores | None:
        state = self.ssn.state
        score = np.zeros(len(nodes))
        weight_sum = 0.0
        for name, w in self._weights.items():
            d = state.dim.get(name)
            if d is None or w <= 0 or task.req[d] <= 0:
                continue
            alloc = state.alloc[d, nodes]
            after = state.used[d, nodes] + task.req[d]
            if _every_node_has(state, d):  # no node to guard against 0: the same quotients, fewer passes
                score += w * np.divide(after, alloc, out=after)
            else:
                score += w * np.divide(after, alloc, out=np.zeros_like(alloc), where=alloc > 0)
            weight_sum += w
        if weight_sum == 0:
            return None
        return score / weight_sum * MAX_SCORE * self.weight


def _every_node_has(state: ClusterState, d: int) -> bool:
    """Whether every node has some of resource `d` (kept until a node changes)."""
    key = (state.node_version, len(state.resources))
    found = state.derived.get("binpack.every-node-has")
    if found is None or found[0] != key:
        found = (key, tuple(bool(v) for v in np.all(state.alloc > 0, axis=1).tolist()))
        state.derived["binpack.every-node-has"] = found
    return cast(tuple[bool, ...], found[1])[d]
