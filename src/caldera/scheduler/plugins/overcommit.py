"""overcommit: admit jobs while the cluster, scaled by `overcommit-factor` (1.2), can hold what is inqueue.

What lower-priority jobs of the job's own queue hold or reserve counts as room
(see `proportion.Yielding`): a busy cluster does not keep out a job that may
preempt them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from caldera.scheduler.framework import PERMIT, REJECT, Plugin
from caldera.scheduler.plugins.proportion import Yielding, fits
from caldera.scheduler.session import Session
from caldera.scheduler.state import JobInfo


class Overcommit(Plugin):
    name = "overcommit"

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        super().__init__(ssn, args)
        self.yielding = Yielding(ssn)

    def job_enqueueable(self, job: JobInfo) -> int:
        state = self.ssn.state
        factor = self.arg_float("overcommit-factor", 1.2)
        used = sum((q.allocated for q in state.queues.values()), np.zeros(len(state.resources)))
        inqueue = sum((q.inqueue for q in state.queues.values()), np.zeros(len(state.resources)))
        need = inqueue + job.min_resources
        idle = state.total * factor - used
        if fits(need, idle, job.min_resources):
            return PERMIT
        return PERMIT if fits(need - self.yielding.of(job), idle, job.min_resources) else REJECT
