"""las: Tiresias' discretised two-dimensional least attained service (2D-LAS).

A job's attained service is GPUs × seconds run, over all its runs (kept by the
state from the pods' own times, `service.py`). Thresholds `las.thresholds`
(GPU-hours, ascending; default [1], Tiresias' two queues split at 3,600
GPU-seconds) cut it into levels; level 0 is the least served. Jobs go by
(level, arrival). A job may preempt (and reclaim from) jobs of a strictly
higher level, never of its own: within a level it is first come, first served,
as Tiresias keeps a queue's running jobs ahead of its pending ones. A
PriorityClass still outranks service: a job never evicts a higher-priority one,
and evicts a lower-priority one whatever its level (configure `priority` with
`enablePreemptable: false` and let this plugin choose).

Starvation: a job that has waited, since its last run ended, `las.promote-knob`
times as long as that run lasted (Tiresias' STARVELIMIT; default 8, 0 turns it
off) is promoted: the service it had is forgiven (`Service.forgiven`), which
puts it back at level 0 until it has run another threshold's worth.

Levels change with time, not only with events: a running job crosses a
threshold, a waiting job becomes due for promotion. At session open the plugin
predicts when each job whose runs changed (`state.run_changed`) next changes
level and keeps those times in a heap on the state (`state.order_changes`);
once one has passed it bumps the state's version, so preemption and placement
that failed are tried again under the new levels. Levels are fixed for a
session (computed once per job), so orders stay consistent within a cycle.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Mapping

from caldera.scheduler.framework import Plugin
from caldera.scheduler.plugins.ranked import victims_by_rank
from caldera.scheduler.session import Session
from caldera.scheduler.state import JobInfo, TaskInfo

HOUR = 3600.0
DEFAULT_THRESHOLDS = (1.0,)  # GPU-hours: Tiresias' simulator (dlas-gpu) splits its two queues at 3,600 GPU-seconds
DEFAULT_PROMOTE_KNOB = 8.0  # the largest of the knobs Tiresias' simulator offers below "never" (0.5 … 8)


class LAS(Plugin):
    name = "las"

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        super().__init__(ssn, args)
        self.marks, self.knob = self.settings(
            lambda p: (
                tuple(h * HOUR for h in _thresholds(p.args.get("las.thresholds", DEFAULT_THRESHOLDS))),
                p.arg_float("las.promote-knob", DEFAULT_PROMOTE_KNOB),
            )
        )
        self._levels: dict[str, int] = {}

    # ------------------------------------------------------------ levels

    def level(self, job: JobInfo) -> int:
        """The job's level this session (0: least served), promoting it first if it has starved."""
        found = self._levels.get(job.key)
        if found is None:
            found = self._levels[job.key] = bisect_right(self.marks, self._effective(job))
        return found

    def _effective(self, job: JobInfo) -> float:
        """Attained service that counts, in GPU-seconds; a job due for promotion has it forgiven now."""
        s, now = job.service, self.ssn.now
        attained = s.attained(now)
        effective = attained - s.forgiven
        due = self._promotion_due(job)
        if due is not None and now >= due and self.marks and effective >= self.marks[0]:
            s.forgiven = attained  # Tiresias resets the promoted job's executed time
            effective = 0.0
        return effective

    def _promotion_due(self, job: JobInfo) -> float | None:
        s = job.service
        if self.knob <= 0 or s.running or s.run_ended is None:
            return None
        return s.run_ended + self.knob * s.last_run

    def _next_change(self, job: JobInfo) -> float | None:
        """When the job's level next changes by the clock alone (None: not until something happens)."""
        s, now = job.service, self.ssn.now
        if s.running:
            if s.gpus <= 0:
                return None
            effective = s.attained(now) - s.forgiven
            i = bisect_right(self.marks, effective)
            return now + (self.marks[i] - effective) / s.gpus if i < len(self.marks) else None
        due = self._promotion_due(job)
        return due if due is not None and due > now else None

    # ------------------------------------------------------------ points

    def on_session_open(self) -> None:
        state, now = self.ssn.state, self.ssn.now
        heap = state.order_changes
        changed = state.run_changed
        while heap and heap[0][0] <= now:
            changed.add(heapq.heappop(heap)[1])
            state.version += 1  # some level moved: what failed under the old levels may succeed now
        for key in sorted(changed):
            job = state.jobs.get(key)
            t = self._next_change(job) if job is not None else None
            if t is not None:
                heapq.heappush(heap, (t, key))
        changed.clear()

    def job_order(self, job: JobInfo) -> tuple[object, ...]:
        return (self.level(job), job.creation)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return victims_by_rank(preemptor, candidates, self.level)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self.preemptable(reclaimer, candidates)


def _thresholds(raw: object) -> list[float]:
    """GPU-hours from YAML: a list of numbers or a comma-separated string, ascending and positive."""
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple):
        raise ValueError("plugin las: las.thresholds must be a list of GPU-hours")
    values: list[float] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int | float | str):
            raise ValueError("plugin las: las.thresholds must be numbers of GPU-hours")
        values.append(float(item))
    if any(v <= 0 for v in values) or values != sorted(values):
        raise ValueError("plugin las: las.thresholds must be positive and ascending")
    return values
