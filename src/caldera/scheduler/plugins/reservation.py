"""reservation: the job that has waited longest, past `reservation.waiting-time`, holds what frees up for it.

A gang bigger than what is free waits while smaller jobs start on every GPU a
finishing job gives back: with a steady stream of small jobs, a large one may
never see enough free at once (Volcano's big-job starvation, its "resource
reservation for target jobs" design). This plugin elects one target per cycle:
of the jobs that have never run and are waiting for their gang, the one waiting
longest, once it has waited `reservation.waiting-time` (a Go duration, default
1h) since submission. The target goes first: its queue is served before the
others (`queue_order`) and it before its queue's other jobs (`job_order`, after
PriorityClass), it is tried every cycle, and it keeps its tentative placement
for the rest of the cycle (`job_reserve`), so the jobs after it can only use
what it cannot. As pods around it finish, the GPUs they free are held for it
until its gang fits; then it starts and the next target, if any, is elected.
(allocate keeps no reservation for a gang its own queue's capability stops:
that would hold nodes against every other queue.)

Bounded so utilisation does not collapse: one target at a time, and only while
the GPUs it lacks are free or expected back within `reservation.horizon`
(default 1h), each running job expected to run as long again as it has run so
far (LAS's premise for the heavy-tailed run times of GPU clusters). Behind
long-running jobs nothing is held; the estimate is made again every cycle.

Only never-started jobs are elected: a job that ran and was stopped is Tiresias'
starvation rule's to promote (the `las` plugin weighs its wait against its run
time), and a preempted job moved ahead of the jobs that preempted it would only
be preempted again.

Opt-in: no shipped policy uses it. On the trace study's samples it cut the
largest jobs' waits where they were longest and raised average JCT more
(docs/policies.md has the numbers).
"""

from __future__ import annotations

from collections.abc import Mapping

from caldera.core import objects as o
from caldera.core.duration import parse_duration
from caldera.core.resources import GPU
from caldera.scheduler.framework import Plugin
from caldera.scheduler.session import Session
from caldera.scheduler.state import READY, JobInfo, QueueInfo, TaskStatus

KEY = "reservation.waiting-time"
HORIZON = "reservation.horizon"
_ADMITTED = (o.PG_INQUEUE, o.PG_RUNNING, o.PG_UNKNOWN)


class Reservation(Plugin):
    name = "reservation"

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        super().__init__(ssn, args)
        self.waiting_time, self.horizon = self.settings(
            lambda p: (_duration(p, KEY, 3600.0), _duration(p, HORIZON, 3600.0))
        )
        self._elected = False
        self._target: JobInfo | None = None

    def target(self) -> JobInfo | None:
        """This cycle's target: the never-started job waiting longest past the waiting time (None: none)."""
        if not self._elected:
            self._elected = True
            state, latest = self.ssn.state, self.ssn.now - self.waiting_time
            due = [
                j
                for j in (state.jobs[k] for k in state.waiting)
                if j.creation <= latest and j.pg_phase in _ADMITTED and _never_started(j)
            ]
            first = min(due, key=lambda j: (j.creation, j.key), default=None)
            self._target = first if first is not None and self._fits_soon(first) else None
        return self._target

    def _fits_soon(self, job: JobInfo) -> bool:
        """Whether the GPUs the job lacks are free, or expected free within the horizon.

        A running job is expected to run as long again as it has run so far (LAS's premise: remaining time
        grows with attained service in the heavy-tailed run times of GPU clusters)."""
        state, now = self.ssn.state, self.ssn.now
        d = state.dim.get(GPU)
        if d is None:
            return True
        lacking = max(job.min_available - job.count(READY), 0)
        asks = sorted(float(t.req[d]) for t in job.tasks.values() if t.status is TaskStatus.PENDING)
        need = sum(asks[:lacking]) / 1000.0  # milli-GPUs, as quantities are
        free = float(self.ssn.free(False)[d][state.schedulable].sum()) / 1000.0
        if free >= need:
            return True
        ends = sorted(
            (now + (now - j.service.run_started), j.service.gpus)
            for j in state.jobs.values()
            if j.service.running and j.service.run_started is not None
        )
        for end, gpus in ends:
            if end - now > self.horizon:
                return False
            free += gpus
            if free >= need:
                return True
        return False

    def on_session_open(self) -> None:
        target = self.target()
        if target is not None:
            # Tried this cycle even though nothing it depends on changed: holding what is free is the point.
            target.failed_at = -1
            target.evict_failed_at.clear()

    def job_order(self, job: JobInfo) -> tuple[object, ...]:
        return (0 if job is self.target() else 1,)

    def queue_order(self, queue: QueueInfo) -> tuple[object, ...]:
        t = self.target()
        return (0 if t is not None and t.queue == queue.name else 1,)

    def job_reserve(self, job: JobInfo) -> bool:
        return job is self.target()


def _never_started(job: JobInfo) -> bool:
    """Waiting for its gang (some task pending, fewer than minAvailable placed) and never run."""
    s = job.service
    return (
        s.epoch is None
        and s.running == 0
        and job.counts.get(TaskStatus.PENDING, 0) > 0
        and job.count(READY) < job.min_available
    )


def _duration(p: Plugin, key: str, default: float) -> float:
    raw = p.args.get(key, default)
    try:
        seconds = parse_duration(raw)
    except ValueError as e:
        raise ValueError(f"plugin reservation: {key} must be a duration (e.g. 1h, 90m, 3600): {e}") from None
    if seconds < 0:
        raise ValueError(f"plugin reservation: {key} must not be negative")
    return seconds
