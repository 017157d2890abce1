"""overcommit: admit jobs while the cluster, scaled by `overcommit-factor` (1.2), can hold what is inqueue."""

from __future__ import annotations

import numpy as np

from caldera.scheduler.framework import PERMIT, REJECT, Plugin
from caldera.scheduler.plugins.proportion import fits
from caldera.scheduler.state import JobInfo


class Overcommit(Plugin):
    name = "overcommit"

    def job_enqueueable(self, job: JobInfo) -> int:
        state = self.ssn.state
        factor = self.arg_float("overcommit-factor", 1.2)
        used = sum((q.allocated for q in state.queues.values()), np.zeros(len(state.resources)))
        inqueue = sum((q.inqueue for q in state.queues.values()), np.zeros(len(state.resources)))
        idle = state.total * factor - used
        return PERMIT if fits(inqueue + job.min_resources, idle, job.min_resources) else REJECT
