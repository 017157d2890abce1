"""Attained service: how many GPU-seconds a job's pods have run, over all its runs (Tiresias' 2D service).

The scheduler only sees pods change, never the clock between cycles, so the
times come from the pods themselves: a run starts at the pod's `startTime` and
ends at its `finishTime` (it exited) or its `deletionTimestamp` (it was asked to
stop: evicted, preempted, killed). `ClusterState.set_pod` opens and closes the
intervals as it observes them; nothing here is tentative (statements never
touch it), so a discarded decision cannot corrupt it.

Invariant: `attained(t)` = Σ over the job's observed running intervals of
GPUs × (min(end, t) − start), kept in O(1) per transition as closed GPU-seconds
plus `gpus × t − since_sum` for the intervals still open. A job's *run* is a
maximal period with at least one of its tasks running; `last_run` is the length
of the last one that ended and `run_ended` when it ended; `ran` adds up the
lengths of the runs that ended and `epoch` is when the first run since the
last promotion began (what Tiresias' starvation rule in the `las` plugin
measures waiting and running from).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Service:
    closed: float = 0.0  # GPU-seconds of intervals that ended
    gpus: float = 0.0  # GPUs of the job's tasks running now
    since_sum: float = 0.0  # Σ gpus × start over the open intervals
    running: int = 0  # tasks running now
    run_started: float | None = None  # when the current run began (None: not running)
    run_ended: float | None = None  # when the last run ended (None: never ran, or running)
    last_run: float = 0.0  # length of the last run that ended
    forgiven: float = 0.0  # service no longer held against the job (set by las when it promotes it)
    ran: float = 0.0  # wall seconds of the runs that ended
    ran_forgiven: float = 0.0  # `ran` when las last promoted the job
    epoch: float | None = None  # when the first run since the last promotion began (None: none yet)

    def attained(self, now: float) -> float:
        """GPU-seconds run up to `now` (for `now` at or after every open interval's start)."""
        return self.closed + self.gpus * now - self.since_sum

    def open(self, gpus: float, start: float) -> None:
        """A task with `gpus` GPUs started running at `start`."""
        if self.running == 0:
            self.run_started = start
            self.run_ended = None
            if self.epoch is None:
                self.epoch = start
        self.running += 1
        self.gpus += gpus
        self.since_sum += gpus * start

    def close(self, gpus: float, start: float, end: float) -> None:
        """A task opened at `start` with `gpus` GPUs stopped running at `end`."""
        end = max(end, start)
        self.running -= 1
        self.gpus -= gpus
        self.since_sum -= gpus * start
        self.closed += gpus * (end - start)
        if self.running == 0:
            self.gpus = self.since_sum = 0.0  # no float residue once nothing runs
            begun = self.run_started if self.run_started is not None else start
            self.last_run = max(end - begun, 0.0)
            self.ran += self.last_run
            self.run_ended = end
            self.run_started = None
