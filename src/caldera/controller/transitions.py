"""Volcano's job state machine as one transition table: (job phase, action class) → what to do.

`TRANSITIONS` maps (job phase, action class) to an `Edge`: the primitive to run
(KillJob, KillTarget or SyncJob), whether retryCount goes up, and the next phase,
given outright or by a check of the pod counts after the step. A phase without a
row for the action takes its `*` row. The rows are `volcano:pkg/controllers/job/state/*.go`
(reference §2.3) with the differences marked "caldera:" below. `state.execute` plans a
step from the row `edge_for` gives.

maxRetry counts retries, not runs (DESIGN.md): with maxRetry 3 a job is restarted
three times and the failure that would need a fourth restart makes it Failed at once,
with retryCount 3: a restart is refused, not counted, once retryCount = maxRetry.
(Volcano increments first and fails on `retryCount ≥ maxRetry` in Restarting, which
allows only maxRetry−1 restarts.) The refusal applies to every row that costs a retry
(RestartJob, RestartTask, RestartPod, ResumeJob), as Volcano's Restarting check does.
Volcano keeps Succeeded and Failed pods on the kill that leads to Failed, for
inspection; caldera does the same on the refused restart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from caldera.controller.events import (
    ABORT_JOB,
    COMPLETE_JOB,
    RESTART_JOB,
    RESTART_PARTITION,
    RESTART_POD,
    RESTART_TASK,
    RESUME_JOB,
    SYNC_JOB,
    TERMINATE_JOB,
)
from caldera.controller.status import PodCounts
from caldera.core.objects import (
    ABORTED,
    ABORTING,
    COMPLETED,
    COMPLETING,
    FAILED,
    JOB_PHASES,
    PENDING,
    RESTARTING,
    RUNNING,
    TERMINATED,
    TERMINATING,
    JobSpec,
)
from caldera.utils.records import immutable

# ---------------------------------------------------------------- the table

KILL_JOB = "KillJob"  # delete the job's pods (all, or all but finished ones), bump the version
KILL_TARGET = "KillTarget"  # delete the pods of one task or one pod
SYNC = "SyncJob"  # create missing pods, delete surplus ones

# Action classes: the columns of the table. Restarting a task, a pod or a partition is one class.
RESTART_TARGET = "Restart{Task,Pod,Partition}"
ANY_ACTION = "*"
_CLASS = {
    RESTART_JOB: RESTART_JOB,
    RESTART_TASK: RESTART_TARGET,
    RESTART_POD: RESTART_TARGET,
    RESTART_PARTITION: RESTART_TARGET,
    ABORT_JOB: ABORT_JOB,
    COMPLETE_JOB: COMPLETE_JOB,
    TERMINATE_JOB: TERMINATE_JOB,
    RESUME_JOB: RESUME_JOB,
    SYNC_JOB: SYNC_JOB,
}


def action_class(action: str) -> str:
    return _CLASS.get(action, ANY_ACTION)


@immutable
class Step:
    """A phase a check moved to, with why."""

    phase: str
    reason: str
    message: str


# (spec, counts after the step, retryCount after the step) → next phase, or None to stay.
Check = Callable[[JobSpec, PodCounts, int], Step | None]


@dataclass(frozen=True, slots=True)
class Edge:
    do: str  # KILL_JOB, KILL_TARGET or SYNC
    retain_finished: bool = False  # KILL_JOB keeps Succeeded and Failed pods (Volcano's PodRetainPhaseSoft)
    retry: bool = False  # retryCount += 1
    to: str | None = None  # the next phase, unconditionally
    check: Check | None = None  # else the next phase from the counts
    sync_if_idle: bool = False  # KILL_JOB with no live pod left is a SyncJob instead


def pending_check(spec: JobSpec, c: PodCounts, retry: int) -> Step | None:
    started = c.running + c.succeeded + c.failed
    if spec.min_available <= started:
        return Step(RUNNING, "MinAvailable", f"{started} pods started, minAvailable {spec.min_available}")
    return None


def running_check(spec: JobSpec, c: PodCounts, retry: int) -> Step | None:
    replicas = spec.total_replicas
    if replicas == 0:
        return None  # scaled to zero: keep the phase
    min_success = spec.min_success
    if min_success is not None and c.succeeded >= min_success:
        return Step(COMPLETED, "MinSuccess", f"{c.succeeded} pods succeeded, minSuccess {min_success}")
    if c.succeeded + c.failed == replicas:
        # (a) When the job's gang covers every task's minimum, each task must reach its own.
        # A task without minAvailable counts with all its replicas, as Volcano's webhook defaults it.
        if spec.min_available >= sum(t.min_members for t in spec.tasks):
            for t in spec.tasks:
                done = c.succeeded_by_task.get(t.name)
                if done is not None and done < t.min_members:
                    return Step(
                        FAILED, "TaskMinAvailable", f"task {t.name}: {done} succeeded, minAvailable {t.min_members}"
                    )
        # (b), (c), (d)
        if min_success is not None and c.succeeded < min_success:
            return Step(FAILED, "MinSuccess", f"all pods finished, {c.succeeded} succeeded, minSuccess {min_success}")
        if c.succeeded >= spec.min_available:
            return Step(COMPLETED, "Finished", f"all pods finished, {c.succeeded} succeeded")
        return Step(
            FAILED, "Finished", f"all pods finished, {c.succeeded} succeeded, minAvailable {spec.min_available}"
        )
    if c.pending > replicas - spec.min_available:
        return Step(PENDING, "GangBroken", f"{c.pending} pods pending, gang needs {spec.min_available} of {replicas}")
    return None


def _restarting_check(spec: JobSpec, c: PodCounts, retry: int) -> Step | None:
    # Restarts beyond maxRetry are refused before they start (`execute`); this only catches a
    # status written by another controller (Volcano's `≥` after incrementing allows one fewer).
    if retry > spec.max_retry:
        return Step(FAILED, "MaxRetry", f"restart {retry} refused, maxRetry {spec.max_retry}")
    if spec.total_replicas - c.terminating >= spec.min_available:
        return Step(PENDING, "Restarted", f"restart {retry} of {spec.max_retry}")
    return None


def _when_idle(phase: str) -> Check:
    def check(spec: JobSpec, c: PodCounts, retry: int) -> Step | None:
        if c.terminating == c.pending == c.running == 0:
            return Step(phase, "PodsGone", "no pod left running or being deleted")
        return None

    return check


TRANSITIONS: dict[tuple[str, str], Edge] = {
    # ---- Pending: the gang is not up yet.
    # A whole-job restart: every pod goes, the job waits for its pods to be gone.
    (PENDING, RESTART_JOB): Edge(KILL_JOB, retry=True, to=RESTARTING),
    # A targeted restart costs a retry as a whole-job one does.
    (PENDING, RESTART_TARGET): Edge(KILL_TARGET, retry=True, to=RESTARTING),
    # Abort, complete and terminate keep finished pods (their logs) and drain the rest.
    (PENDING, ABORT_JOB): Edge(KILL_JOB, retain_finished=True, to=ABORTING),
    (PENDING, COMPLETE_JOB): Edge(KILL_JOB, retain_finished=True, to=COMPLETING),
    (PENDING, TERMINATE_JOB): Edge(KILL_JOB, retain_finished=True, to=TERMINATING),
    # Sync (and ResumeJob, meaningless here): create pods; Running once minAvailable pods started.
    (PENDING, ANY_ACTION): Edge(SYNC, check=pending_check),
    # ---- Running: the same kills as Pending.
    (RUNNING, RESTART_JOB): Edge(KILL_JOB, retry=True, to=RESTARTING),
    (RUNNING, RESTART_TARGET): Edge(KILL_TARGET, retry=True, to=RESTARTING),
    (RUNNING, ABORT_JOB): Edge(KILL_JOB, retain_finished=True, to=ABORTING),
    (RUNNING, COMPLETE_JOB): Edge(KILL_JOB, retain_finished=True, to=COMPLETING),
    (RUNNING, TERMINATE_JOB): Edge(KILL_JOB, retain_finished=True, to=TERMINATING),
    # Sync: minSuccess, then the all-finished rules (a)–(d), then back to Pending if the gang broke.
    (RUNNING, ANY_ACTION): Edge(SYNC, check=running_check),
    # ---- Restarting: waiting for the killed pods to go; every action ends in the same check.
    (RESTARTING, SYNC_JOB): Edge(SYNC, check=_restarting_check),
    (RESTARTING, RESTART_TARGET): Edge(KILL_TARGET, check=_restarting_check),
    # Any other action kills the whole job again; once no live pod is left that is a sync instead,
    # so a late duplicate RestartJob cannot delete the freshly re-created PodGroup (Volcano #6037).
    (RESTARTING, ANY_ACTION): Edge(KILL_JOB, check=_restarting_check, sync_if_idle=True),
    # ---- Aborting: draining; a resume restarts instead, as a retry.
    (ABORTING, RESUME_JOB): Edge(KILL_JOB, retain_finished=True, retry=True, to=RESTARTING),
    (ABORTING, ANY_ACTION): Edge(KILL_JOB, retain_finished=True, check=_when_idle(ABORTED)),
    # ---- Aborted: nothing runs until resumed.
    (ABORTED, RESUME_JOB): Edge(KILL_JOB, retain_finished=True, retry=True, to=RESTARTING),
    (ABORTED, ANY_ACTION): Edge(KILL_JOB, retain_finished=True),
    # ---- Completing and Terminating: draining towards their final phase, whatever is asked.
    (COMPLETING, ANY_ACTION): Edge(KILL_JOB, retain_finished=True, check=_when_idle(COMPLETED)),
    (TERMINATING, ANY_ACTION): Edge(KILL_JOB, retain_finished=True, check=_when_idle(TERMINATED)),
    # ---- Completed, Terminated, Failed: final; any action only makes sure nothing runs.
    (COMPLETED, ANY_ACTION): Edge(KILL_JOB, retain_finished=True),
    (TERMINATED, ANY_ACTION): Edge(KILL_JOB, retain_finished=True),
    (FAILED, ANY_ACTION): Edge(KILL_JOB, retain_finished=True),
}

# caldera: any row with retry=True, once the job has used its maxRetry retries, is replaced by this:
# the restart is refused, the job fails at once, and its finished pods stay for inspection.
REFUSED_RESTART = Edge(KILL_JOB, retain_finished=True, to=FAILED)


def edge_for(phase: str, action: str) -> Edge:
    """The row for `action` in `phase`; an unknown or empty phase is Pending, as in Volcano's state factory."""
    if phase not in JOB_PHASES:
        phase = PENDING
    return TRANSITIONS.get((phase, action_class(action))) or TRANSITIONS[(phase, ANY_ACTION)]
