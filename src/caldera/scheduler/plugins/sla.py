"""sla: a job waiting longer than `sla-waiting-time` goes first and holds what it can get.

The waiting time comes from the job's annotation `sla-waiting-time` or the
plugin argument of the same name (a Go duration). Once it has passed, the job
is ordered before all others of its priority, is admitted by enqueue whatever
the queue's state of overcommit, and keeps its tentative allocation for the
rest of each cycle (`job_reserve`) so smaller jobs can only use what it cannot:
as pods around it finish, it accumulates the space it needs, so it starts in
bounded time instead of starving behind a stream of small jobs.
"""

from __future__ import annotations

from functools import lru_cache

from caldera.core.duration import parse_duration
from caldera.scheduler.framework import ABSTAIN, PERMIT, Plugin
from caldera.scheduler.state import JobInfo

KEY = "sla-waiting-time"


@lru_cache(maxsize=1024, typed=True)
def _seconds(raw: str | int | float) -> float | None:
    """A waiting time's seconds (None: not a duration); asked of every job every cycle, parsed once."""
    try:
        return parse_duration(raw)
    except ValueError:
        return None


class SLA(Plugin):
    name = "sla"

    def waiting_time(self, job: JobInfo) -> float | None:
        raw = job.annotations.get(KEY, self.args.get(KEY))
        if not isinstance(raw, str | int | float):
            return None  # nothing else is a duration (parse_duration says so too)
        return _seconds(raw)

    def deadline(self, job: JobInfo) -> float | None:
        w = self.waiting_time(job)
        return None if w is None else job.creation + w

    def expired(self, job: JobInfo) -> bool:
        d = self.deadline(job)
        return d is not None and self.ssn.now >= d

    def job_order(self, job: JobInfo) -> tuple[object, ...]:
        d = self.deadline(job)
        if d is not None and self.ssn.now >= d:
            return (0, d)
        return (1, 0.0)

    def job_enqueueable(self, job: JobInfo) -> int:
        return PERMIT if self.expired(job) else ABSTAIN

    def job_reserve(self, job: JobInfo) -> bool:
        return self.expired(job)
