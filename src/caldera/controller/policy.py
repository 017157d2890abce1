"""Policy resolution (which action a request asks for) and the table of delayed actions.

`resolve` is Volcano's `applyPolicies` (`job_controller_util.go`) as a pure function: an
explicit action wins; internal events and requests from an older job version only
re-sync; then the named task's policies, then the job's, each in order, first match
wins; otherwise SyncJob. `DelayedActions` holds the actions whose policy had a
timeout. Invariant: at most one delayed action per (job, pod the request was about),
and an entry leaves the table exactly once: popped by `due`, or cancelled.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from caldera.controller.events import (
    ANY_EVENT,
    INTERNAL_ACTIONS,
    INTERNAL_EVENTS,
    JOB_SCOPE,
    JOB_TARGET,
    POD_EVENTS,
    POD_EVICTED_EVENT,
    POD_FAILED_EVENT,
    POD_PENDING_EVENT,
    POD_RUNNING_EVENT,
    SYNC_JOB,
    TASK_SCOPE,
    Request,
    Target,
    scope_of,
    target_for,
)
from caldera.core.objects import POD_FAILED, POD_PENDING, POD_RUNNING, JobSpec, LifecyclePolicy, Pod


@dataclass(frozen=True, slots=True)
class Resolution:
    """The action a request resolved to, its target, and its delay in seconds (None: now)."""

    action: str
    delay: float | None = None
    target: Target = JOB_TARGET


def _matches(policy: LifecyclePolicy, req: Request) -> bool:
    named = bool(req.event) and (req.event in policy.events or ANY_EVENT in policy.events)
    # A pod is Pending for a while on every start; only a timeout makes that an event worth acting on.
    if named and (req.event != POD_PENDING_EVENT or policy.timeout is not None):
        return True
    # Exit codes are only ever carried by PodFailed; 0 is refused by validation.
    return policy.exit_code is not None and req.exit_code is not None and policy.exit_code == req.exit_code


def _first_match(policies: Sequence[LifecyclePolicy], req: Request) -> LifecyclePolicy | None:
    for policy in policies:
        if _matches(policy, req):
            return policy
    return None


def resolve(spec: JobSpec, req: Request, job_version: int) -> Resolution:
    """The action `req` asks of a job with `spec` at status version `job_version`."""
    if req.action:
        return Resolution(req.action, None, target_for(req.action, req))
    if req.event in INTERNAL_EVENTS:
        return _sync(req)
    # A pod of an earlier incarnation of the job (before a whole-job kill) must not trigger policies.
    if req.job_version is not None and req.job_version < job_version:
        return _sync(req)
    policy = None
    if req.task:
        task = spec.task(req.task)
        if task is not None:
            policy = _first_match(task.policies, req)
    if policy is None:
        policy = _first_match(spec.policies, req)
    if policy is None:
        return _sync(req)
    # Volcano runs a zero timeout at once, like no timeout.
    delay = policy.timeout if policy.timeout else None
    return Resolution(policy.action, delay, target_for(policy.action, req))


def only_syncs(spec: JobSpec) -> bool:
    """Whether `resolve` resolves every request without an explicit action to SyncJob, now, for a job
    with `spec`: neither the job nor any of its tasks names a policy."""
    return not spec.policies and not any(t.policies for t in spec.tasks)


def _sync(req: Request) -> Resolution:
    return Resolution(SYNC_JOB, None, target_for(SYNC_JOB, req))


# ---------------------------------------------------------------- delayed actions


@dataclass(frozen=True, slots=True)
class DelayedAction:
    """An action to run on job `key` at time `due`, raised by `event` about pod `target.pod`."""

    key: str
    action: str
    due: float
    target: Target
    event: str = ""
    pod_uid: str = ""
    seq: int = 0  # insertion order: ties on `due` fire first-in first-out


_PHASE_EVENT = {POD_PENDING: POD_PENDING_EVENT, POD_RUNNING: POD_RUNNING_EVENT, POD_FAILED: POD_FAILED_EVENT}


class DelayedActions:
    """Pending delayed actions of all jobs, keyed by (job key, pod name of the raising request).

    The caller's loop, as Volcano's `processNextReq`: for each request, first
    `cancel_for_request`, then `resolve`; a delay goes to `add`, anything else is
    executed and, when not internal, followed by `cancel_scope`. Actions popped by
    `due` are executed as they are (no second resolution), then `cancel_scope`.

    Entries are indexed by job (cancelling touches only that job's entries) and kept
    in a heap by (due, seq) for `due` and `next_due`; a cancelled or replaced entry
    stays in the heap until it reaches the top and is skipped there, so no operation
    scans the whole table.
    """

    __slots__ = ("_by_job", "_heap", "_seq", "_size")

    def __init__(self) -> None:
        self._by_job: dict[str, dict[str, DelayedAction]] = {}  # job key → pod name → entry
        self._heap: list[tuple[float, int, DelayedAction]] = []
        self._seq = 0
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def has(self, key: str) -> bool:
        """Whether job `key` has a delayed action pending."""
        return key in self._by_job

    def entries(self, key: str | None = None) -> list[DelayedAction]:
        """The pending actions (of job `key` only, if given), in firing order."""
        if key is not None:
            found = list(self._by_job.get(key, {}).values())
        else:
            found = [e for slots in self._by_job.values() for e in slots.values()]
        return sorted(found, key=lambda e: (e.due, e.seq))

    def add(
        self, key: str, action: str, due: float, target: Target, *, event: str = "", pod_uid: str = ""
    ) -> DelayedAction:
        """Schedule `action` on job `key` at `due`; returns the entry now pending for that slot.

        The same action already pending for the slot is kept with its earlier due time
        (a pod that stays Pending must not push its own timeout back); a different
        action replaces it."""
        slots = self._by_job.setdefault(key, {})
        old = slots.get(target.pod)
        if old is not None and old.action == action:
            return old
        self._seq += 1
        entry = DelayedAction(key, action, due, target, event, pod_uid, self._seq)
        if old is None:
            self._size += 1
        slots[target.pod] = entry
        heapq.heappush(self._heap, (due, entry.seq, entry))
        return entry

    def _remove(self, entry: DelayedAction) -> None:
        slots = self._by_job[entry.key]
        del slots[entry.target.pod]
        if not slots:
            del self._by_job[entry.key]
        self._size -= 1

    def _current(self, entry: DelayedAction) -> bool:
        """Whether a heap item is still the pending entry of its slot (not cancelled or replaced)."""
        return self._by_job.get(entry.key, {}).get(entry.target.pod) is entry

    def cancel_for_request(self, key: str, req: Request, pod_uid: str = "") -> list[DelayedAction]:
        """Cancel what a pod event makes moot (Volcano's CleanPodDelayActionsIfNeed).

        Any pod event but PodPending cancels the pod's PodPending timer (only for the
        same pod incarnation when both uids are known); PodRunning also cancels its
        PodFailed and PodEvicted timers: the pod recovered."""
        if req.event not in POD_EVENTS or req.event == POD_PENDING_EVENT:
            return []
        entry = self._by_job.get(key, {}).get(req.pod)
        if entry is None:
            return []
        same_pod = not (pod_uid and entry.pod_uid) or pod_uid == entry.pod_uid
        cancel = (entry.event == POD_PENDING_EVENT and same_pod) or (
            entry.event in (POD_FAILED_EVENT, POD_EVICTED_EVENT) and req.event == POD_RUNNING_EVENT
        )
        if not cancel:
            return []
        self._remove(entry)
        return [entry]

    def cancel_for_pod_phase(self, pod: Pod, new_phase: str, *, deleted: bool = False) -> list[DelayedAction]:
        """`cancel_for_request` for the pod event a phase change (or an unasked deletion) raises."""
        if not self._by_job:
            return []  # nothing to cancel (the common case: no policy with a timeout)
        event = POD_EVICTED_EVENT if deleted else _PHASE_EVENT.get(new_phase, "")
        key = f"{pod.metadata.namespace}/{pod.job}"
        return self.cancel_for_request(key, Request(event=event, pod=pod.name), pod.metadata.uid)

    def cancel_scope(self, key: str, action: str, target: Target) -> list[DelayedAction]:
        """After `action` ran on job `key`: cancel the job's delayed actions of the same scope.

        Job-level actions cancel every job-level timer; task-, pod- and
        partition-level ones only timers for the same task or pod. Internal actions
        cancel nothing. (Partitions are not modelled, so a partition is its pod.)"""
        if action in INTERNAL_ACTIONS:
            return []
        scope = scope_of(action)
        cancelled: list[DelayedAction] = []
        for entry in list(self._by_job.get(key, {}).values()):
            if scope_of(entry.action) != scope:
                continue
            if scope == TASK_SCOPE and entry.target.task != target.task:
                continue
            if scope not in (JOB_SCOPE, TASK_SCOPE) and entry.target.pod != target.pod:
                continue
            self._remove(entry)
            cancelled.append(entry)
        return sorted(cancelled, key=lambda e: e.seq)

    def drop_job(self, key: str) -> list[DelayedAction]:
        """Forget every delayed action of job `key` (the job is gone)."""
        dropped = self.entries(key)
        for entry in dropped:
            self._remove(entry)
        return dropped

    def _skip_stale(self) -> None:
        heap = self._heap
        while heap and not self._current(heap[0][2]):
            heapq.heappop(heap)

    def due(self, now: float) -> list[DelayedAction]:
        """Pop the actions whose time has come, earliest first, ties in insertion order."""
        ready: list[DelayedAction] = []
        heap = self._heap
        self._skip_stale()
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)[2]
            self._remove(entry)
            ready.append(entry)
            self._skip_stale()
        return ready

    def next_due(self) -> float | None:
        """When the next action falls due, or None when nothing is pending."""
        self._skip_stale()
        return self._heap[0][0] if self._heap else None
