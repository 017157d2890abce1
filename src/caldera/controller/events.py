"""The controller's vocabulary: events, actions, requests and action targets, plus the pod handler.

A `Request` is what one observed change asks of the controller; policy resolution
(`policy.py`) turns it into an action and the state machine (`state.py`) executes it.
`requests_for_pod_change` is Volcano's pod event handler as a pure function: for one
pod change it names exactly the event Volcano's handler would emit
(`volcano:pkg/controllers/job/job_controller_handler.go`, `controllers/cache/cache.go`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

from caldera.core.objects import (
    JOB_VERSION_KEY,
    PG_UNKNOWN,
    POD_FAILED,
    POD_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    Job,
    Pod,
)
from caldera.utils.records import immutable

# ---------------------------------------------------------------- events

ANY_EVENT = "*"
POD_FAILED_EVENT = "PodFailed"
POD_EVICTED_EVENT = "PodEvicted"
POD_PENDING_EVENT = "PodPending"
POD_RUNNING_EVENT = "PodRunning"
JOB_UNKNOWN_EVENT = "Unknown"
TASK_COMPLETED_EVENT = "TaskCompleted"
TASK_FAILED_EVENT = "TaskFailed"
JOB_UPDATED_EVENT = "JobUpdated"
OUT_OF_SYNC_EVENT = "OutOfSync"
COMMAND_ISSUED_EVENT = "CommandIssued"

EVENTS = frozenset(
    {
        ANY_EVENT,
        POD_FAILED_EVENT,
        POD_EVICTED_EVENT,
        POD_PENDING_EVENT,
        POD_RUNNING_EVENT,
        JOB_UNKNOWN_EVENT,
        TASK_COMPLETED_EVENT,
        TASK_FAILED_EVENT,
        JOB_UPDATED_EVENT,
        OUT_OF_SYNC_EVENT,
        COMMAND_ISSUED_EVENT,
    }
)
# Raised by the controller itself; never matched against user policies.
INTERNAL_EVENTS = frozenset({OUT_OF_SYNC_EVENT, COMMAND_ISSUED_EVENT, POD_RUNNING_EVENT})
# Events about one pod's phase: the only ones that cancel that pod's delayed actions.
POD_EVENTS = frozenset({POD_PENDING_EVENT, POD_RUNNING_EVENT, POD_FAILED_EVENT, POD_EVICTED_EVENT})

# ---------------------------------------------------------------- actions

ABORT_JOB = "AbortJob"
RESTART_JOB = "RestartJob"
RESTART_TASK = "RestartTask"
RESTART_POD = "RestartPod"
RESTART_PARTITION = "RestartPartition"
TERMINATE_JOB = "TerminateJob"
COMPLETE_JOB = "CompleteJob"
RESUME_JOB = "ResumeJob"
SYNC_JOB = "SyncJob"

ACTIONS = frozenset(
    {
        ABORT_JOB,
        RESTART_JOB,
        RESTART_TASK,
        RESTART_POD,
        RESTART_PARTITION,
        TERMINATE_JOB,
        COMPLETE_JOB,
        RESUME_JOB,
        SYNC_JOB,
    }
)
# Reconciliation only: executing one cancels no delayed action.
INTERNAL_ACTIONS = frozenset({SYNC_JOB})

# ---------------------------------------------------------------- targets

JOB_SCOPE = "job"
TASK_SCOPE = "task"
POD_SCOPE = "pod"
PARTITION_SCOPE = "partition"

_ACTION_SCOPE = {RESTART_TASK: TASK_SCOPE, RESTART_POD: POD_SCOPE, RESTART_PARTITION: PARTITION_SCOPE}


def scope_of(action: str) -> str:
    """What an action acts on; everything but the three targeted restarts acts on the whole job."""
    return _ACTION_SCOPE.get(action, JOB_SCOPE)


@dataclass(frozen=True, slots=True)
class Target:
    """What an action acts on: `scope` says which of `task` and `pod` is meant.

    Both names are kept whatever the scope, as Volcano's delayAction keeps them, so a
    task-scoped timer still knows which pod's event raised it."""

    scope: str = JOB_SCOPE
    task: str = ""
    pod: str = ""


JOB_TARGET = Target()


@immutable
class Request:
    """One thing the controller was told: an event, or an explicit `action` (a user's command).

    `job_version` is the job version the pod was created for (its annotation); None
    for requests not about a pod, which are never considered stale."""

    event: str
    task: str = ""
    pod: str = ""
    exit_code: int | None = None
    action: str = ""
    job_version: int | None = None


OUT_OF_SYNC = Request(event=OUT_OF_SYNC_EVENT)  # requests are immutable: the most common one is shared
_UNKNOWN = Request(event=JOB_UNKNOWN_EVENT)

# Targets handed out, by (scope, task, pod): they are immutable, and a pod's requests ask for the same few.
_TARGETS: dict[tuple[str, str, str], Target] = {}
_TARGETS_MAX = 65536


def target_for(action: str, req: Request) -> Target:
    """The target of `action` run for `req` (Volcano's GetStateAction)."""
    key = (_ACTION_SCOPE.get(action, JOB_SCOPE), req.task, req.pod)
    target = _TARGETS.get(key)
    if target is None:
        if len(_TARGETS) >= _TARGETS_MAX:
            _TARGETS.clear()
        target = _TARGETS[key] = Target(*key)
    return target


def command(action: str) -> Request:
    """A user's explicit command (vcctl's Command CR): it bypasses policy resolution."""
    return Request(event=COMMAND_ISSUED_EVENT, action=action)


# ---------------------------------------------------------------- the pod handler


def _job_version(pod: Pod) -> int | None:
    raw = pod.metadata.annotations.get(JOB_VERSION_KEY)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def _task_completed(job: Job, task: str, pods: Sequence[Pod]) -> bool:
    spec = job.spec.task(task)
    if spec is None or spec.replicas <= 0:
        return False
    succeeded = sum(1 for p in pods if p.task == task and p.status.phase == POD_SUCCEEDED)
    return succeeded >= spec.replicas


def task_restart_limit(job: Job, task: str) -> int | None:
    """The container restarts of its live pods at which a task raises TaskFailed; None: never.

    -1 means unlimited; 0 is read as Volcano's default of 3, as its cache does for jobs
    written before the field existed (0 would otherwise fail every task at once)."""
    spec = job.spec.task(task)
    if spec is None or spec.max_retry == -1:
        return None
    return spec.max_retry or 3


def task_failed(job: Job, task: str, pods: Sequence[Pod]) -> bool:
    """Container restarts of the task's live (Pending or Running) pods reached the task's maxRetry."""
    limit = task_restart_limit(job, task)
    if limit is None:
        return False
    live = [p for p in pods if p.task == task and p.status.phase in (POD_RUNNING, POD_PENDING)]
    return bool(live) and sum(p.status.restart_count for p in live) >= limit


def requests_for_pod_change(
    job: Job, pods: Sequence[Pod], old_phase: str | None, pod: Pod | None, deleted: bool
) -> list[Request]:
    """The request Volcano's handler raises for one change of `pod` (a list: empty when there is nothing).

    `pods` are the job's pods; `pod` is the changed pod in its new state (it replaces
    the entry of the same name in `pods`), `old_phase` its phase before (None: just
    added). `deleted` is True only for a deletion the controller did not ask for.
    One change raises one event, the first that applies of:
      deleted → PodEvicted (OutOfSync if the pod had already finished);
      → Failed → PodFailed with the pod's exit code;
      → Succeeded → TaskCompleted once the task's succeeded pods ≥ its replicas;
      Pending or Running with the task's container restarts ≥ its maxRetry → TaskFailed;
      added or → Pending → PodPending;  → Running → PodRunning;
      anything else → OutOfSync.
    """
    if pod is None:
        return []
    phase = pod.status.phase
    changed = old_phase != phase

    event = OUT_OF_SYNC_EVENT
    exit_code: int | None = None
    if deleted:
        # Losing a finished pod loses no work; only a live pod's deletion is an eviction.
        event = OUT_OF_SYNC_EVENT if pod.finished else POD_EVICTED_EVENT
    elif phase == POD_FAILED:
        if changed:
            event, exit_code = POD_FAILED_EVENT, pod.status.exit_code
    elif phase == POD_SUCCEEDED:
        if changed and _task_completed(job, pod.task, [*(p for p in pods if p.name != pod.name), pod]):
            event = TASK_COMPLETED_EVENT
    elif phase in (POD_PENDING, POD_RUNNING):
        if _restarts_reach_limit(job, pods, pod):
            event = TASK_FAILED_EVENT
        elif changed:
            event = POD_PENDING_EVENT if phase == POD_PENDING else POD_RUNNING_EVENT
    return [
        Request(
            event=event,
            task=pod.task,
            pod=pod.name,
            exit_code=exit_code,
            job_version=_job_version(pod),
        )
    ]


_RESTARTS = attrgetter("status.restart_count")
_LIVE = (POD_RUNNING, POD_PENDING)


def _restarts_reach_limit(job: Job, pods: Sequence[Pod], pod: Pod) -> bool:
    """`task_failed` for the task of `pod`, a live pod in its new state, among the job's `pods`: one pass."""
    limit = task_restart_limit(job, pod.task)
    if limit is None:
        return False
    if sum(map(_RESTARTS, pods)) + pod.status.restart_count < limit:
        return False  # every pod's restarts together, an upper bound, summed in C: a gang's pods in O(n) each
    task, name = pod.task, pod.name
    others = sum(
        p.status.restart_count
        for p in pods
        if p.task == task and p.name != name and p.status.phase in (POD_RUNNING, POD_PENDING)
    )
    return others + pod.status.restart_count >= limit  # the task has a live pod: `pod`


def live_restarts(pods: Iterable[Pod]) -> dict[str, int]:
    """Per task, the container restarts of its live (Pending or Running) pods among `pods`: what
    `task_failed` compares with the task's limit, for every task in one pass."""
    restarts: dict[str, int] = {}
    for p in pods:
        if p.status.phase in _LIVE:
            restarts[p.task] = restarts.get(p.task, 0) + p.status.restart_count
    return restarts


def requests_for_new_pods(job: Job, pods: Sequence[Pod], new: Sequence[Pod]) -> list[Request]:
    """What Volcano's handler raises for each of `new`, pods just added to `pods` (which holds them).

    The same as `requests_for_pod_change` with no old phase for each new pod (PodPending,
    or TaskFailed when the task's live pods already used its restarts), computed in one
    pass over `pods` rather than one per new pod: a gang of n pods is created in O(n)."""
    restarts = live_restarts(pods)
    out: list[Request] = []
    for pod in new:
        limit = task_restart_limit(job, pod.task)
        failed = limit is not None and restarts.get(pod.task, 0) >= limit
        event = TASK_FAILED_EVENT if failed else POD_PENDING_EVENT
        out.append(Request(event=event, task=pod.task, pod=pod.name, job_version=_job_version(pod)))
    return out


def request_for_started_pod(job: Job, restarts: Mapping[str, int], old_phase: str | None, pod: Pod) -> Request:
    """`requests_for_pod_change` for `pod`, live (Pending or Running) and not deleted, given `live_restarts` of the
    job's pods as they are now (`pod` among them): its one request without a pass over the job's pods, so
    that a gang of n pods bound in one cycle costs O(n), not O(n²)."""
    limit = task_restart_limit(job, pod.task)
    if limit is not None and restarts.get(pod.task, 0) >= limit:
        event = TASK_FAILED_EVENT
    else:
        phase = pod.status.phase
        event = (
            OUT_OF_SYNC_EVENT
            if old_phase == phase
            else POD_PENDING_EVENT
            if phase == POD_PENDING
            else POD_RUNNING_EVENT
        )
    return Request(event=event, task=pod.task, pod=pod.name, job_version=_job_version(pod))


def requests_for_podgroup_change(old_phase: str, new_phase: str) -> list[Request]:
    """Volcano's PodGroup handler: a phase change re-syncs the job, and Unknown raises the Unknown event."""
    if old_phase == new_phase:
        return []
    return [_UNKNOWN if new_phase == PG_UNKNOWN else OUT_OF_SYNC]
