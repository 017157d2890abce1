"""srtf: shortest remaining time first, preemptive: an oracle yardstick, not a policy for users.

No scheduler knows how long a training job has left; a simulator does. It
installs `state.remaining` (the job's remaining run time in seconds, the work
it would lose on preemption included), and this plugin orders jobs by it and
lets a job evict jobs with strictly more time left. Jobs the oracle knows
nothing of (outside simulation, or running until killed) come last and are
never preferred over known ones. What it achieves bounds what a policy that
must guess durations (las, or Helios' QSSF from history) can get near. It
is a yardstick, not a lower bound: no order is optimal for gangs of different
sizes, and `srtf.gpu-time: true` (the `srtf-gpu` policy, Tiresias' simulator's
shortest-gpu) orders by remaining GPU-time, remaining time × the job's GPUs,
which favours small jobs as average JCT rewards. A PriorityClass still
outranks remaining time, as in `las`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from caldera.core.resources import GPU
from caldera.scheduler.framework import Plugin
from caldera.scheduler.plugins.ranked import victims_by_rank
from caldera.scheduler.session import Session
from caldera.scheduler.state import JobInfo, TaskInfo


class SRTF(Plugin):
    name = "srtf"

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        super().__init__(ssn, args)
        self.gpu_time = self.settings(lambda p: p.arg_bool("srtf.gpu-time", False))
        self._remaining: dict[str, float] = {}  # per session: the order must not move within a cycle
        self._gpu = ssn.state.dim.get(GPU)

    def remaining(self, job: JobInfo) -> float:
        found = self._remaining.get(job.key)
        if found is None:
            oracle = self.ssn.state.remaining
            r = oracle(job) if oracle is not None else None
            if r is not None and self.gpu_time and self._gpu is not None:
                r *= max(float(job.min_resources[self._gpu]) / 1000.0, 1.0)  # milli-GPUs; CPU jobs count as 1
            found = self._remaining[job.key] = math.inf if r is None else r
        return found

    def job_order(self, job: JobInfo) -> tuple[object, ...]:
        return (self.remaining(job),)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return victims_by_rank(preemptor, candidates, self.remaining)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self.preemptable(reclaimer, candidates)
