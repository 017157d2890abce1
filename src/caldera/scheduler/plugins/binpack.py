"""binpack: prefer the nodes that are fullest after placement, so whole nodes stay free for big gangs.

score = Σ_r w_r · (used_r + req_r) / allocatable_r ÷ Σ w_r × 100 × `binpack.weight`, over the
resources the task requests. Weights: `binpack.cpu` (1), `binpack.memory` (1), and for each
resource listed in `binpack.resources` (default `nvidia.com/gpu`), `binpack.resources.<name>` (1).
"""

from __future__ import annotations

import numpy as np

from caldera.core.resources import CPU, GPU, MEMORY
from caldera.scheduler.framework import Indices, Plugin, Scores
from caldera.scheduler.state import TaskInfo

MAX_SCORE = 100.0


class Binpack(Plugin):
    name = "binpack"

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
        for name, w in self.weights().items():
            d = state.dim.get(name)
            if d is None or w <= 0 or task.req[d] <= 0:
                continue
            alloc = state.alloc[d, nodes]
            after = state.used[d, nodes] + task.req[d]
            score += w * np.divide(after, alloc, out=np.zeros_like(alloc), where=alloc > 0)
            weight_sum += w
        if weight_sum == 0:
            return None
        return score / weight_sum * MAX_SCORE * self.arg_float("binpack.weight", 1.0)
