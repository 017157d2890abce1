"""consolidate: put a gang's pods on as few nodes as possible, since a spread gang trains slower.

binpack alone fills the fullest nodes first, which for a gang of one-GPU pods
means the holes: a 4-pod gang lands on four nodes with one free GPU each. For a
task of a job with more than one pod, this plugin scores a node
100 × `consolidate.weight` (default 3) × (1 if the job already has a pod placed
there, else half the part of the job's still unplaced GPUs the node's idle GPUs
would hold, capped at 1/2): the first pod goes to a node that holds the whole
rest of the gang (binpack breaks the tie towards the fullest of those), the
others follow it while it has room. Tiresias and Gandiva measured the cost of spreading;
the simulator's `spread` cost models it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from caldera.core.resources import GPU
from caldera.scheduler.framework import Indices, Plugin, Scores
from caldera.scheduler.session import Session
from caldera.scheduler.state import OCCUPYING, TaskInfo, TaskStatus

MAX_SCORE = 100.0
DEFAULT_WEIGHT = 3.0  # against binpack's 1: a node the gang is on, or that holds it all, beats a full hole


class Consolidate(Plugin):
    name = "consolidate"

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        super().__init__(ssn, args)
        self.weight = self.settings(lambda p: p.arg_float("consolidate.weight", DEFAULT_WEIGHT))
        self._gpu = ssn.state.dim.get(GPU)

    def node_order(self, task: TaskInfo, nodes: Indices) -> Scores | None:
        job, d = task.job, self._gpu
        if d is None or len(job.tasks) < 2 or task.req[d] <= 0:
            return None
        placed: list[int] = []
        rest = 0.0
        for t in job.tasks.values():
            if t.node >= 0 and (t.status in OCCUPYING or t.status is TaskStatus.PIPELINED):
                placed.append(t.node)
            elif t.status is TaskStatus.PENDING:
                rest += float(t.req[d])
        s = self.ssn.state
        everywhere = len(nodes) == len(s.node_names)  # placement.py asks for every node, in order
        idle = s.alloc[d] - s.used[d] - s.nominated[d]  # `Session.free(False)`'s row d, alone
        if not everywhere:
            idle = idle[nodes]
        # 0.5 × min(idle / rest, 1), 1 where the job is; × MAX_SCORE × weight: in place, the same operations
        if rest > 0:
            scores: Scores = np.divide(idle, rest, out=idle)
            np.minimum(scores, 1.0, out=scores)
        else:
            scores = np.ones(len(idle))
        scores *= 0.5
        if placed:
            if everywhere:
                scores[placed] = 1.0
            else:
                here = np.zeros(len(s.node_names), dtype=bool)
                here[placed] = True
                scores[here[nodes]] = 1.0
        scores *= MAX_SCORE
        scores *= self.weight
        return scores
