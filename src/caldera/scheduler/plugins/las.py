"""las: Tiresias' discretised two-dimensional least attained service (2D-LAS).

A job's attained service is GPUs × seconds run, over all its runs (kept by the
state from the pods' own times, `service.py`). Thresholds cut it into levels;
level 0 is the least served: `las.queue-limits` in GPU-seconds (default
[3250, 7200]: the three queues of Tiresias' simulator, `dlas-gpu` in
SymbioticLab/Tiresias simulator/jobs.py) or `las.thresholds` in GPU-hours,
ascending. Jobs go by (level, arrival). A job may preempt (and reclaim from) jobs of a strictly
higher level, never of its own: within a level it is first come, first served,
as Tiresias keeps a queue's running jobs ahead of its pending ones. A
PriorityClass still outranks service: a job never evicts a higher-priority one,
and evicts a lower-priority one whatever its level (configure `priority` with
`enablePreemptable: false` and let this plugin choose).

Starvation, Tiresias' rule (`solve_starvation` in its simulator): a waiting job
above level 0 whose waiting time since its first run after its last promotion
has reached `las.promote-knob` times its running time over the same period
(default 8, Tiresias' `dlas-gpu-8`; 0 turns it off, which is plain `dlas-gpu`)
is promoted: the service it had is forgiven (`Service.forgiven`), which puts it
back at level 0 until it has run another threshold's worth, and both times
start again from zero. Tiresias compares totals since the last promotion, not
the wait with the last run alone: a job preempted after short runs is promoted
sooner than one that has run long.

Preempting a job that cannot checkpoint throws its whole current run away.
With `las.max-loss` (GPU-seconds; caldera-default sets it) such a job is a
victim only while everything it will have lost, over its life, is worth at
most this many GPU-seconds: its attained service, since each earlier run was
thrown away too. Past it the work lost outweighs what a preemptor gains by
starting now, and a job is never preempted over and over. A job is taken
to checkpoint when it has the annotation `caldera.dev/checkpoint-interval`.

A bound on waiting, `las.max-wait` (a Go duration; off unless set): a job that
has waited that long without its gang placed, since its submission or its last
stop, is overdue. An overdue job may preempt any running job of its
PriorityClass or a lower one, whatever their levels and `las.max-loss`, and
takes the set that frees the GPUs it lacks with the least lost work
(`least_loss.py`: nothing for a job that checkpoints, the length of its current
run for one that cannot, which its completion time pays again), instead of
waiting for a level or a finishing job that may come hours later; but only
while that loss is covered by what it gains, a wait as long again as it has
waited (LAS's premise applied to waiting: what is ahead grows with what has
passed). Both are times, as average JCT counts them, not GPU-seconds: a gang
does not outweigh the jobs it stops by its size. A job that has been overdue is never a
victim of las's levels or of another overdue job afterwards (only of a higher
PriorityClass): stopped, it would soon be overdue again, and two of them would
take turns.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Mapping
from weakref import WeakKeyDictionary

from caldera.core.duration import parse_duration
from caldera.core.resources import GPU
from caldera.scheduler.framework import Plugin
from caldera.scheduler.plugins.least_loss import Holder, least_loss
from caldera.scheduler.plugins.ranked import victims_by_rank
from caldera.scheduler.session import Session
from caldera.scheduler.state import ALLOCATED, READY, ClusterState, JobInfo, TaskInfo, TaskStatus

HOUR = 3600.0
_SCHEDULED: WeakKeyDictionary[ClusterState, set[str]] = WeakKeyDictionary()  # jobs whose overdue time is on the heap
_OVERDUE: WeakKeyDictionary[ClusterState, set[str]] = WeakKeyDictionary()  # jobs seen overdue: never victims again
DEFAULT_LIMITS = (3250.0, 7200.0)  # GPU-seconds: Tiresias' simulator's dlas-gpu queues (jobs.py queue_limit, 3 queues)
DEFAULT_PROMOTE_KNOB = 8.0  # the largest of the knobs Tiresias' simulator offers below "never" (0.5 … 8)
CHECKPOINT_INTERVAL = "caldera.dev/checkpoint-interval"  # a job that checkpoints says so (sim/engine.py reads it)


class LAS(Plugin):
    name = "las"

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        super().__init__(ssn, args)
        self.marks, self.knob, self.max_loss, self.max_wait = self.settings(
            lambda p: (
                _marks(p.args),
                p.arg_float("las.promote-knob", DEFAULT_PROMOTE_KNOB),
                p.arg_float("las.max-loss", -1.0),
                _max_wait(p.args),
            )
        )
        self._levels: dict[str, int] = {}
        self._chosen: dict[tuple[str, str], frozenset[str]] = {}  # an overdue job's victims, by job key and action

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
            s.forgiven, s.ran_forgiven, s.epoch = attained, s.ran, None  # Tiresias resets both times
            effective = 0.0
        return effective

    def _promotion_due(self, job: JobInfo) -> float | None:
        """When the waiting job's wait since `epoch` reaches knob × its run time since then.

        Waiting, its run time E is fixed, and its wait at t is (t − epoch) − E: due at epoch + (knob + 1) E."""
        s = job.service
        if self.knob <= 0 or s.running or s.epoch is None:
            return None
        ran = s.ran - s.ran_forgiven
        return s.epoch + (self.knob + 1.0) * ran if ran > 0 else None

    def _next_change(self, job: JobInfo) -> float | None:
        """When the job's level next changes by the clock alone (None: not until something happens)."""
        s, now = job.service, self.ssn.now
        if s.running:
            if s.gpus <= 0:
                return None
            effective = s.attained(now) - s.forgiven
            i = bisect_right(self.marks, effective)
            return now + (self.marks[i] - effective) / s.gpus if i < len(self.marks) else None
        times = [t for t in (self._promotion_due(job), self._overdue_at(job)) if t is not None and t > now]
        return min(times, default=None)

    # ------------------------------------------------------------ the wait bound

    def _waiting_since(self, job: JobInfo) -> float:
        """When the waiting job last began to wait: its submission, or the end of its last run."""
        s = job.service
        return s.run_ended if s.run_ended is not None else job.creation

    def _overdue_at(self, job: JobInfo) -> float | None:
        """When the waiting job will have waited `las.max-wait` (None: no bound, or it is running)."""
        if self.max_wait < 0 or job.service.running:
            return None
        return self._waiting_since(job) + self.max_wait

    def overdue(self, job: JobInfo) -> bool:
        """Whether the waiting job has waited `las.max-wait` since it was submitted or last stopped."""
        due = self._overdue_at(job)
        if due is None or self.ssn.now < due:
            return False
        _OVERDUE.setdefault(self.ssn.state, set()).add(job.key)
        return True

    def protected(self, job: JobInfo) -> bool:
        """Whether the job has been overdue (it, or its first run, started only after waiting past the bound)."""
        if self.max_wait < 0:
            return False
        if job.key in _OVERDUE.get(self.ssn.state, ()):
            return True
        s = job.service
        return s.ran == 0 and s.run_started is not None and s.run_started - job.creation >= self.max_wait

    def _schedule_new(self, state: ClusterState) -> None:
        """Put each newly waiting job's overdue time on the state's heap, once (its runs' changes do the rest)."""
        seen = _SCHEDULED.setdefault(state, set())
        if len(seen) > 2 * len(state.jobs) + 64:
            seen.intersection_update(state.jobs)
        for key in state.waiting:
            if key in seen:
                continue
            seen.add(key)
            job = state.jobs[key]
            t = self._overdue_at(job)
            if t is not None and job.service.epoch is None and t > self.ssn.now:
                heapq.heappush(state.order_changes, (t, key))

    def _least_loss(self, job: JobInfo, candidates: list[TaskInfo], action: str) -> list[TaskInfo]:
        """The candidates of the set of jobs that frees what the overdue job lacks for the least lost work.

        Chosen once per action and session: the job's tasks ask one after the other, and each must see the
        same set. Preempt's candidates are the job's own queue's, reclaim's the other queues': a set chosen
        for one says nothing of the other's."""
        chosen = self._chosen.get((job.key, action))
        if chosen is None:
            chosen = self._chosen[(job.key, action)] = frozenset(v.key for v in self._choose(job, candidates))
        return [c for c in candidates if c.job.key in chosen]

    def _choose(self, job: JobInfo, candidates: list[TaskInfo]) -> list[JobInfo]:
        state = self.ssn.state
        d = state.dim.get(GPU)
        if d is None:
            return []
        placed = job.count(READY) + job.counts.get(TaskStatus.PIPELINED, 0)
        asks = sorted(float(t.req[d]) / 1000.0 for t in job.tasks.values() if t.status is TaskStatus.PENDING)
        free = float(self.ssn.free(True)[d][state.schedulable].sum()) / 1000.0  # milli-GPUs, as quantities are
        lacking = sum(asks[: max(job.min_available - placed, 0)]) - free
        held: dict[str, float] = {}
        jobs: dict[str, JobInfo] = {}
        for c in candidates:
            v = c.job
            if v is job or v.priority > job.priority or c.status not in ALLOCATED:
                continue
            if v.priority == job.priority and self.protected(v):
                continue  # it waited past the bound itself
            held[v.key] = held.get(v.key, 0.0) + float(c.req[d]) / 1000.0
            jobs[v.key] = v
        holders = [Holder(jobs[k], held[k]) for k in sorted(jobs)]
        # What it gains: a wait about as long again as it has waited (the wait ahead of a job that cannot fit,
        # like the run ahead of a running one, taken to grow with what has passed).
        return least_loss(lacking, holders, self._lost, self.ssn.now - self._waiting_since(job))

    def _lost(self, job: JobInfo) -> float:
        """Seconds of work stopping the job now throws away: nothing if it checkpoints, else its current run
        (which its completion time then pays again)."""
        s = job.service
        if CHECKPOINT_INTERVAL in job.annotations or s.run_started is None:
            return 0.0
        return self.ssn.now - s.run_started

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
        if self.max_wait >= 0:
            self._schedule_new(state)

    def job_order(self, job: JobInfo) -> tuple[object, ...]:
        return (self.level(job), job.creation)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo], action: str = "Preempt") -> list[TaskInfo]:
        if self.max_wait >= 0 and self.overdue(preemptor.job):
            return self._least_loss(preemptor.job, candidates, action)
        victims = victims_by_rank(preemptor, candidates, self.level)
        if self.max_loss < 0 and self.max_wait < 0:
            return victims
        # The budget weighs what las gains by its levels: a higher PriorityClass preempts whatever it costs.
        mine = preemptor.job.priority
        return [v for v in victims if v.job.priority < mine or self._spared_not(v.job)]

    def _spared_not(self, job: JobInfo) -> bool:
        """Whether las's levels may take the job (of the preemptor's own PriorityClass)."""
        if self.protected(job):
            return False  # it waited past the bound: stopped now, it would soon be overdue again
        return self.max_loss < 0 or self._affordable(job)

    def _affordable(self, job: JobInfo) -> bool:
        """Whether the job, stopped now, will have lost at most `las.max-loss` GPU-seconds over its life.

        A job that cannot checkpoint starts over after each stop: the service of its earlier runs was
        thrown away, its current run would be too, so its attained service is what preemption costs it
        in all. A budget per run instead let one job be preempted again and again, each time just
        under it (8 times, 2 GPU-hours thrown away for a 1.3-hour job, on a Philly sample)."""
        if CHECKPOINT_INTERVAL in job.annotations:
            return True
        return job.service.attained(self.ssn.now) <= self.max_loss

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self.preemptable(reclaimer, candidates, "Reclaim")


def _max_wait(args: Mapping[str, object]) -> float:
    """`las.max-wait` in seconds (a Go duration or a number of seconds); -1: no bound."""
    raw = args.get("las.max-wait")
    if raw is None:
        return -1.0
    try:
        seconds = parse_duration(raw)
    except ValueError as e:
        raise ValueError(f"plugin las: las.max-wait must be a duration (e.g. 8h, 90m, 3600): {e}") from None
    if seconds < 0:
        raise ValueError("plugin las: las.max-wait must not be negative")
    return seconds


def _marks(args: Mapping[str, object]) -> tuple[float, ...]:
    """The thresholds in GPU-seconds: `las.queue-limits` (GPU-seconds) or `las.thresholds` (GPU-hours)."""
    if "las.queue-limits" in args:
        return tuple(_thresholds(args["las.queue-limits"], "las.queue-limits", "GPU-seconds"))
    if "las.thresholds" in args:
        return tuple(h * HOUR for h in _thresholds(args["las.thresholds"], "las.thresholds", "GPU-hours"))
    return DEFAULT_LIMITS


def _thresholds(raw: object, key: str, unit: str) -> list[float]:
    """Numbers from YAML: a list or a comma-separated string, ascending and positive."""
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple):
        raise ValueError(f"plugin las: {key} must be a list of {unit}")
    values: list[float] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int | float | str):
            raise ValueError(f"plugin las: {key} must be numbers of {unit}")
        values.append(float(item))
    if any(v <= 0 for v in values) or values != sorted(values):
        raise ValueError(f"plugin las: {key} must be positive and ascending")
    return values
