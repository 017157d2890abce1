"""Training progress in simulation: synchronous gangs, checkpoints, and what preemption throws away.

A job's pods train together: progress is made only while its gang is up, that
is while at least minAvailable of its pods count (running, or ended by
themselves: a pod that finished its part does not stop the others). The job's
*progress clock* P advances with wall time while the gang is up and stands
still while it is down, so a pod bound alone (a partial gang) holds its GPUs
and does nothing.

Each pod name of a job is a *slot* with the work its run needs (its task's
duration, in seconds of progress; None runs until killed) and the progress it
has kept (`done`). A run ends once the slot's work is done: while the gang is
up its end is `now + work − done − (P − P at its start)` on the wall clock.
When a running pod is stopped (evicted, preempted, killed, lost with its node)
its slot keeps what the job's last checkpoint saved, `⌊done / c⌋ · c` for the
job's checkpoint interval c (0: every instant is saved), or nothing without
one; the rest is lost work, counted in GPU-seconds. A new pod of the same name
resumes from what its slot kept; a pod restarted in place runs its whole
duration again, as the `caldera simulate` contract says.

Costs (`Costs`, all 0 by default: the free model): a gang that comes up
trains only after `start_latency` seconds (its pods starting) plus `resume`
seconds when it has progress to load back (a checkpoint restored, the model
warmed up); a checkpointing job that is preempted saves its checkpoint in
`preempt` seconds of its own progress (what it kept shrinks by that much); and
a gang spread over more nodes than its GPUs need trains at speed
1 / (1 + `spread` × extra nodes), fixed when the gang comes up. Delays and slow
progress are counted as `overhead` GPU-seconds.

Elastic jobs (`add_job(..., model=Speedup)`, `speedup.py`): the workers share
the job's progress P, counted in seconds of its run at its submitted size, and
P advances at the model's rate for the number of running workers and the nodes
they use (1 at the submitted size, packed). Each worker's run ends when P
reaches the job's work. A worker joining or leaving a running job restarts its
training at the new size from where it is (`resume` seconds with costs, as
Pollux's simulator charges each re-allocation); below minAvailable the job goes
down to its last checkpoint as any other. Their overhead counts the delays only.

Invariants: `up` is the number of slots running or ended by themselves;
`up_since` is set exactly while up ≥ minAvailable (it may lie ahead of now:
the gang's start-up delay, during which P stands still); a slot's `end` is the wall
time of its run's end, valid only while it runs and the gang is up (or went
down at that very instant); every operation is O(1) except a gang coming up,
which (re)times the job's running slots. Pure: time is always an argument.
With the free model every number is the same as before costs existed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from caldera.sim.costs import FREE, Costs
from caldera.sim.speedup import Speedup

_EPS = 1e-9  # progress compared with checkpoint multiples: 300.0 done at interval 100 saves 300


@dataclass(slots=True)
class Slot:
    work: float | None  # seconds of progress the current run needs; None: until killed
    gpus: float
    done: float = 0.0  # progress kept from earlier runs (what the last checkpoint saved)
    start_p: float = 0.0  # the job's progress clock when this run started
    running: bool = False
    ended: bool = False  # its run ended by itself: it still counts towards the gang
    end: float | None = None  # wall time its run ends (while the gang is up)
    node: str = ""


@dataclass(frozen=True, slots=True)
class WorkReport:
    """What a job lost: preemptions, work thrown away and GPUs held while its gang was not up."""

    preemptions: int = 0  # instants at which the scheduler preempted or reclaimed some of its pods
    lost_gpu_seconds: float = 0.0  # progress thrown away by stops (back to the last checkpoint) × GPUs
    idle_gpu_seconds: float = 0.0  # GPUs held by running pods while the gang was below minAvailable
    overhead_gpu_seconds: float = 0.0  # GPUs held through start-up delays and lost to spread placement
    run_seconds: float = 0.0  # wall time its gang was up (start-up delays included), over all its runs

    def to_dict(self) -> dict[str, float | int]:
        """The extra fields of a job row in the simulation report."""
        return {
            "preemptions": self.preemptions,
            "lostGpuSeconds": round(self.lost_gpu_seconds, 6),
            "idleGpuSeconds": round(self.idle_gpu_seconds, 6),
            "overheadGpuSeconds": round(self.overhead_gpu_seconds, 6),
            "runSeconds": round(self.run_seconds, 6),
        }


@dataclass(slots=True)
class JobWork:
    min_available: int
    checkpoint: float | None  # seconds between checkpoints; None: not checkpointable
    slots: dict[str, Slot] = field(default_factory=dict)  # by pod key
    up: int = 0
    clock: float = 0.0  # progress made in the gang's past up periods
    up_since: float | None = None
    down_at: float | None = None  # when the gang last went down
    held_gpus: float = 0.0  # GPUs of the running slots
    last: float = 0.0  # when idle time was last accounted
    preemptions: int = 0
    preempted_at: float | None = None
    lost: float = 0.0
    idle: float = 0.0
    speed: float = 1.0  # progress per second while up (spread placement slows it)
    up_gpus: float = 0.0  # GPUs of the slots running when the gang came up
    up_from: float = 0.0  # when the current up period began (up_since minus its delay)
    overhead: float = 0.0  # GPU-seconds of delays and slowdown, of up periods already over
    ran: float = 0.0  # wall seconds of up periods already over
    done_at: float | None = None  # when its last running slot ended by itself (its work done)
    model: Speedup | None = None  # an elastic job's goodput model: its progress is the job's, at a rate of its size

    def workers(self) -> tuple[int, int]:
        """(running slots, distinct nodes they run on)."""
        running = [s for s in self.slots.values() if s.running]
        return len(running), len({s.node for s in running})

    def progress(self, now: float) -> float:
        if self.up_since is None or now <= self.up_since:
            return self.clock
        return self.clock + self.speed * (now - self.up_since)

    def report(self, now: float) -> WorkReport:
        idle = self.idle + (self.held_gpus * (now - self.last) if self.up_since is None else 0.0)
        up = now - self.up_from if self.up_since is not None and self.done_at is None else 0.0
        overhead = self.overhead + (self._overhead_now(now) if self.done_at is None else 0.0)
        return WorkReport(self.preemptions, self.lost, idle, overhead, self.ran + up)

    def _overhead_now(self, now: float) -> float:
        """GPU-seconds of the current up period not turned into progress (its delay, its slowdown)."""
        if self.up_since is None or self.up_gpus <= 0 or self.model is not None:  # elastic: counted as it happens
            return 0.0
        return self.up_gpus * ((now - self.up_from) - (self.progress(now) - self.clock))


class Progress:
    """Every job's work, advanced by what the executor reports (a start, a stop, a run's end)."""

    def __init__(self, costs: Costs = FREE) -> None:
        self.costs = costs
        self.jobs: dict[str, JobWork] = {}
        self._job_of: dict[str, str] = {}  # pod key → job key

    def add_job(self, job_key: str, min_available: int, checkpoint: float | None, model: Speedup | None = None) -> None:
        """A job of the workload; with `model` it is elastic (see `elastic` in the module docstring)."""
        self.jobs[job_key] = JobWork(max(min_available, 1), checkpoint, model=model)

    def start(
        self,
        job_key: str,
        pod_key: str,
        work: float | None,
        gpus: float,
        restart: bool,
        now: float,
        node: str = "",
    ) -> list[tuple[str, float]]:
        """A pod's run starts (`restart`: the same pod again, in place): the (pod key, end time) to wait for."""
        job = self.jobs.get(job_key)
        if job is None:  # not a job of the workload: runs its duration from now
            return [] if work is None else [(pod_key, now + work)]
        self._account_idle(job, now)
        slot = job.slots.get(pod_key)
        if slot is None:
            slot = job.slots[pod_key] = Slot(work, gpus)
            self._job_of[pod_key] = job_key
        if slot.running:  # started again without a stop in between: this run replaces the last one
            self._leave(job, slot, now, keep=0.0)
            job.up -= 1
        if restart or slot.ended:
            slot.done = 0.0  # a run restarted in place, or a new pod of a slot that had finished, starts over
        if not slot.ended:
            job.up += 1
        slot.work, slot.gpus, slot.node = work, gpus, node
        slot.running, slot.ended, slot.end = True, False, None
        slot.start_p = job.progress(now)
        job.held_gpus += gpus
        if job.up_since is None and job.up >= job.min_available:
            return self._gang_up(job, now)
        if job.up_since is not None:
            if job.model is not None:
                return self._rescale(job, now)
            return self._time(job, pod_key, slot, now)
        return []

    def stop(self, pod_key: str, now: float) -> list[tuple[str, float]]:
        """The pod was stopped before its run ended: its slot keeps what the last checkpoint saved.

        The (pod key, end time) of runs whose end moved (an elastic job's, when it shrinks)."""
        job, slot = self._find(pod_key)
        if job is None or slot is None or not slot.running:
            return []
        self._account_idle(job, now)
        if job.model is not None:
            return self._stop_elastic(job, slot, now)
        done = self._done(job, slot, now)
        c = job.checkpoint
        saved = done if c == 0 else (math.floor(done / c + _EPS) * c if c is not None else 0.0)
        if c is not None and job.preempted_at == now:  # a preemption: the checkpoint is saved now, at a cost
            saved -= self.costs.preempt
        saved = max(min(saved, done), 0.0)
        job.lost += (done - saved) * slot.gpus
        self._leave(job, slot, now, keep=saved)
        job.up -= 1
        if job.up_since is not None and job.up < job.min_available:
            job.overhead += job._overhead_now(now)
            job.ran += now - job.up_from
            job.clock = job.progress(now)
            job.up_since, job.down_at = None, now
        return []

    def ended(self, pod_key: str, now: float) -> None:
        """The pod's run ended by itself (its work done, or its process died): it still counts."""
        job, slot = self._find(pod_key)
        if job is None or slot is None or not slot.running:
            return
        self._account_idle(job, now)
        self._leave(job, slot, now, keep=self._done(job, slot, now))
        slot.ended = True
        if job.up_since is not None and job.held_gpus <= _EPS:  # the job's work is done: its times are final
            job.overhead += job._overhead_now(now)
            job.ran += now - job.up_from
            job.done_at = now

    def preempted(self, job_key: str, now: float) -> None:
        """The scheduler evicted pods of the job now (one preemption however many pods)."""
        job = self.jobs.get(job_key)
        if job is not None and job.preempted_at != now:
            job.preempted_at = now
            job.preemptions += 1

    def ends_now(self, pod_key: str, now: float) -> bool:
        """Whether the pod's run really ends at `now` (an end timed before a gang change may be stale)."""
        job, slot = self._find(pod_key)
        if job is None:
            return True  # timed once, never changed
        return (
            slot is not None and slot.running and slot.end == now and (job.up_since is not None or job.down_at == now)
        )

    def will_end(self, pod_key: str) -> bool:
        """Whether the pod's run has an end coming (False while its gang is down, or if it runs until killed)."""
        job, slot = self._find(pod_key)
        if job is None or slot is None:
            return True
        return slot.running and slot.end is not None and job.up_since is not None

    def remaining(self, job_key: str, work: float | None, now: float) -> float | None:
        """Seconds of progress the job still needs for `work` in all, given the furthest slot (oracle)."""
        job = self.jobs.get(job_key)
        if work is None:
            return None
        if job is None or not job.slots:
            return work
        furthest = 0.0
        for s in job.slots.values():
            if s.work is not None:  # pods running until killed say nothing of the job's progress
                done = self._done(job, s, now) if s.running else s.done
                furthest = done if done > furthest else furthest
        return max(work - furthest, 0.0)

    def report(self, job_key: str, now: float) -> WorkReport:
        job = self.jobs.get(job_key)
        return job.report(now) if job is not None else WorkReport()

    # ------------------------------------------------------------ internals

    def _find(self, pod_key: str) -> tuple[JobWork | None, Slot | None]:
        job = self.jobs.get(self._job_of.get(pod_key, ""))
        return job, (job.slots.get(pod_key) if job is not None else None)

    def _done(self, job: JobWork, slot: Slot, now: float) -> float:
        if job.model is not None:  # an elastic job's workers share its progress
            p = job.progress(now)
            return min(p, slot.work) if slot.work is not None else p
        done = slot.done + job.progress(now) - slot.start_p
        return min(done, slot.work) if slot.work is not None else done

    def _leave(self, job: JobWork, slot: Slot, now: float, keep: float) -> None:
        slot.done, slot.running, slot.end = keep, False, None
        job.held_gpus -= slot.gpus

    def _account_idle(self, job: JobWork, now: float) -> None:
        if job.up_since is None:
            job.idle += job.held_gpus * (now - job.last)
        job.last = now

    def _gang_up(self, job: JobWork, now: float) -> list[tuple[str, float]]:
        same_instant = job.down_at == now  # down and up again at once: ends already timed still hold
        if job.model is not None:
            job.up_from, job.done_at = now, None
            costs = self.costs
            delay = 0.0 if same_instant else costs.start_latency + (costs.resume if job.clock > 0 else 0.0)
            return self._retime(job, now, delay)
        running = [s for s in job.slots.values() if s.running]
        job.up_from, job.up_gpus, job.done_at = now, sum(s.gpus for s in running), None
        if same_instant:
            job.up_since = now  # the same speed, no start-up: the pods that were up went on training
        else:
            costs = self.costs
            resumes = costs.resume != 0.0 and any(s.done > 0 for s in running)
            job.up_since = now + costs.start_latency + (costs.resume if resumes else 0.0)
            # Without a spread cost the speed is 1 wherever the pods run: their nodes need not be counted.
            job.speed = costs.speed(job.up_gpus, len({s.node for s in running})) if costs.spread > 0 else 1.0
        out: list[tuple[str, float]] = []
        for key, slot in job.slots.items():
            if slot.running and not (same_instant and slot.end is not None):
                out.extend(self._time(job, key, slot, now))
        return out

    def _time(self, job: JobWork, key: str, slot: Slot, now: float) -> list[tuple[str, float]]:
        if slot.work is None:
            return []
        start = now if job.up_since is None or job.up_since < now else job.up_since
        slot.end = start + max(slot.work - self._done(job, slot, now), 0.0) / job.speed
        return [(key, slot.end)]

    # ------------------------------------------------------------ elastic jobs

    def _rescale(self, job: JobWork, now: float) -> list[tuple[str, float]]:
        """A worker joined or left a running elastic job: it restarts at its new size from where it is."""
        return self._retime(job, now, self._restart(job, now))

    def _restart(self, job: JobWork, now: float) -> float:
        """Folds the job's progress in; how long its restart at a new size takes: `resume` once it has
        progress to carry over, and never less than what is left of a restart under way (joined, not added)."""
        p = job.progress(now)
        job.clock = p
        pending = job.up_since - now if job.up_since is not None and job.up_since > now else 0.0
        return max(pending, self.costs.resume if p > 0 else 0.0)

    def _retime(self, job: JobWork, now: float, delay: float) -> list[tuple[str, float]]:
        """Train from `now + delay` at the rate of the running workers; every running run's new end."""
        assert job.model is not None
        n, nodes = job.workers()
        if job.up_since is not None and job.up_since > now:  # a delay under way is replaced, not added to
            job.overhead -= job.up_gpus * (job.up_since - now)
        job.up_gpus = sum(s.gpus for s in job.slots.values() if s.running)
        job.up_since = now + delay
        job.speed = job.model.rate(n, nodes)
        job.overhead += job.up_gpus * delay
        out: list[tuple[str, float]] = []
        for key, slot in job.slots.items():
            if slot.running:
                out.extend(self._time(job, key, slot, now))
        return out

    def _stop_elastic(self, job: JobWork, slot: Slot, now: float) -> list[tuple[str, float]]:
        """A worker of an elastic job stopped: the job shrinks, or goes down to its last checkpoint."""
        p = job.progress(now)
        slot.running, slot.end = False, None
        job.held_gpus -= slot.gpus
        job.up -= 1
        if job.up_since is None:
            return []
        if job.up >= job.min_available:
            return self._retime(job, now, self._restart(job, now))
        c = job.checkpoint
        saved = p if c == 0 else (math.floor(p / c + _EPS) * c if c is not None else 0.0)
        if c is not None and job.preempted_at == now:
            saved -= self.costs.preempt
        saved = max(min(saved, p), 0.0)
        job.lost += (p - saved) * (job.held_gpus + slot.gpus)
        job.ran += now - job.up_from
        job.clock = saved
        job.up_since, job.down_at = None, now
        return []
