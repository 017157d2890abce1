"""Counting a job's pods and building the JobStatus a state-machine step leads to.

Invariant: every pod is counted exactly once: as terminating when it is being deleted
(already, or by the step being planned), otherwise by its phase; pods the step
creates count as pending, as Volcano's syncJob counts them. Phase, counts and times
of a JobStatus are always rebuilt from scratch, never patched, so they cannot drift.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import field

from caldera.core.objects import (
    ABORTED,
    COMPLETED,
    FAILED,
    POD_FAILED,
    POD_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    TERMINATED,
    Job,
    JobStatus,
    Pod,
)
from caldera.utils.records import immutable

# Phases that stop the clock: the job's pods are gone or going, for good or until a resume.
STOPPED_PHASES = frozenset({COMPLETED, FAILED, TERMINATED, ABORTED})


@immutable
class PodCounts:
    """A job's pods by phase (Volcano's JobStatus counters), plus succeeded pods per task.

    `succeeded_by_task` has a key for every task with at least one counted,
    non-terminating pod: Volcano's TaskStatusCount, which the Running check consults
    only for tasks present in it."""

    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    succeeded_by_task: Mapping[str, int] = field(default_factory=dict)

    @property
    def alive(self) -> int:
        """Pods that still hold or wait for resources."""
        return self.pending + self.running + self.terminating


def job_status_counts(
    pods: Sequence[Pod], killed: Collection[str] = (), created: Sequence[tuple[str, int]] = ()
) -> PodCounts:
    """Count `pods` as they will be once the pods named in `killed` are being deleted and `created` exist."""
    by_phase = {POD_PENDING: 0, POD_RUNNING: 0, POD_SUCCEEDED: 0, POD_FAILED: 0}
    terminating = unknown = 0
    by_task: dict[str, int] = {}
    for pod in pods:
        if pod.deletion_timestamp is not None or pod.name in killed:
            terminating += 1
            continue
        phase = pod.status.phase
        by_task.setdefault(pod.task, 0)
        if phase in by_phase:
            by_phase[phase] += 1
            if phase == POD_SUCCEEDED:
                by_task[pod.task] += 1
        else:
            unknown += 1
    for task, _ in created:
        by_task.setdefault(task, 0)
    return PodCounts(
        pending=by_phase[POD_PENDING] + len(created),
        running=by_phase[POD_RUNNING],
        succeeded=by_phase[POD_SUCCEEDED],
        failed=by_phase[POD_FAILED],
        terminating=terminating,
        unknown=unknown,
        succeeded_by_task=by_task,
    )


def build_status(
    job: Job,
    counts: PodCounts,
    *,
    phase: str,
    now: float,
    retry_count: int,
    version: int,
    reason: str = "",
    message: str = "",
    pod_retries: dict[str, int] | None = None,
) -> JobStatus:
    """The job's next status: `counts`, and `phase` with its bookkeeping.

    On a phase change the transition time is `now` and a condition is appended;
    reason and message are replaced only on a change (an unchanged phase keeps the
    story of how it was reached). `start_time` is set the first time
    running+succeeded reaches minAvailable and then kept across restarts;
    `completion_time` is set on entering Completed, Failed, Terminated or Aborted and
    cleared when a resumed job leaves Aborted."""
    old = job.status
    changed = phase != old.phase
    start_time = old.start_time
    if start_time is None and counts.running + counts.succeeded >= max(job.spec.min_available, 1):
        start_time = now
    completion_time = old.completion_time
    if changed:
        completion_time = now if phase in STOPPED_PHASES else None
    return JobStatus(
        phase=phase,
        reason=reason if changed else old.reason,
        message=message if changed else old.message,
        last_transition_time=now if changed else old.last_transition_time,
        retry_count=retry_count,
        version=version,
        min_available=job.spec.min_available,
        pending=counts.pending,
        running=counts.running,
        succeeded=counts.succeeded,
        failed=counts.failed,
        terminating=counts.terminating,
        unknown=counts.unknown,
        start_time=start_time,
        completion_time=completion_time,
        conditions=[*old.conditions, (phase, now)] if changed else list(old.conditions),
        pod_retries=dict(old.pod_retries if pod_retries is None else pod_retries),
    )
