"""The job controller's half of the control plane: requests → policies → plans → pods and PodGroups.

A change to a job or its pods becomes a `Request`; `resolve` turns it into an action
(now, or later through `DelayedActions`), `execute` plans the state machine's step and
`_run` carries the plan out: the job's status, pods killed, the PodGroup created or
dropped, pods rendered and created. Invariant: a PodGroup leaves the scheduler only
once none of its pods holds a node (`_drop_podgroup`), so no resource is handed out twice.

A sync that kept the job's phase, retry count and version, killed nothing and neither
created nor dropped its PodGroup leaves the job settled: a sync of the same inputs
plans nothing new (the pods it created are counted as the Pending pods they are).
Every change to a job, its PodGroup or its pods goes through `_touch` (which also tells
the store what to write), so while the job's touch count is what it was when it was
settled, a SyncJob has nothing to do and is skipped: a single-pod job's controller
steps go from five to four.
`ControlPlane` (control.py) owns the objects and calls in here.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from caldera.controller import (
    DelayedActions,
    Request,
    execute,
    live_restarts,
    make_pod,
    make_podgroup,
    only_syncs,
    pod_name,
    request_for_started_pod,
    requests_for_new_pods,
    requests_for_pod_change,
    resolve,
    resync_is_idle,
    target_for,
)
from caldera.controller.events import INTERNAL_ACTIONS, OUT_OF_SYNC, SYNC_JOB, Target
from caldera.controller.ttl import TtlQueue
from caldera.core import objects as o
from caldera.core.meta import ObjectMeta
from caldera.scheduler.state import OCCUPYING, ClusterState
from caldera.system.backoff import RestartBackoff
from caldera.system.executor import Executor
from caldera.system.history import Attempts
from caldera.utils.clock import Clock

LIVE_PHASES = (o.POD_PENDING, o.POD_RUNNING)  # a task's restarts are counted over its pods in these


class JobReconciler:
    """The controller's steps over the control plane's objects (set up by `ControlPlane.__init__`)."""

    clock: Clock
    executor: Executor
    backoff: RestartBackoff
    history: Attempts
    state: ClusterState
    jobs: dict[str, o.Job]
    podgroups: dict[str, o.PodGroup]  # by job key
    pods: dict[str, o.Pod]
    job_pods: dict[str, dict[str, o.Pod]]  # job key → pod name → pod
    delayed: DelayedActions
    ttl: TtlQueue  # finished jobs to delete later
    _requests: deque[tuple[str, Request]]
    _stopping: set[str]  # pods the control plane asked to stop (not evictions by others)
    _released: dict[str, set[str]]  # job key → keys of its PodGroups deleted while pods of them still hold nodes
    _name_waiters: dict[str, str]  # pod key → job whose pod of that name waits for the pod holding it to go
    _dirty: bool  # something changed since the last scheduling cycle
    _touched: set[str]  # job keys whose job, podgroup or pods changed since `take_touched`
    _changes: dict[str, int]  # job key → how many times it was touched
    _settled: dict[str, int]  # job key → its touch count after the sync that left it settled
    _uid: int

    if TYPE_CHECKING:  # the control plane's, which these steps call back

        def record(
            self, kind: str, obj: str, node: str = "", reason: str = "", message: str = "", namespace: str = "default"
        ) -> None: ...

        def pod_stopped(self, key: str, exit_code: int | None = None) -> None: ...

    def _touch(self, job_key: str) -> None:
        """The job, its PodGroup or its pods changed (or a request about it came)."""
        self._touched.add(job_key)
        self._changes[job_key] = self._changes.get(job_key, 0) + 1

    def _request(self, job_key: str, req: Request) -> None:
        self._touch(job_key)
        self._requests.append((job_key, req))

    def take_touched(self) -> set[str]:
        """The keys of the jobs whose job, podgroup or pods changed since the last call (and forget them)."""
        touched, self._touched = self._touched, set()
        return touched

    def _handle(self, key: str, req: Request, syncs: dict[str, None]) -> None:
        job = self.jobs.get(key)
        if job is None:
            return
        if not req.action and only_syncs(job.spec) and not self.delayed.has(key):
            syncs[key] = None  # what `resolve` gives, with no timer of the job's to cancel
            return
        pod = self.job_pods[key].get(req.pod) if req.pod else None
        self.delayed.cancel_for_request(key, req, pod.metadata.uid if pod else "")
        res = resolve(job.spec, req, job.status.version)
        target = target_for(res.action, req)
        if res.delay is not None:
            self.delayed.add(
                key,
                res.action,
                self.clock.now() + res.delay,
                target,
                event=req.event,
                pod_uid=pod.metadata.uid if pod else "",
            )
            return
        if res.action == SYNC_JOB:
            syncs[key] = None
            return
        self._run(key, res.action, target)

    def _run(self, key: str, action: str, target: Target) -> None:
        job = self.jobs.get(key)
        if job is None:
            return
        if action == SYNC_JOB and key in self._settled and self._settled[key] == self._changes.get(key):
            return  # nothing changed since a sync left the job settled (module docstring)
        now = self.clock.now()
        pods = list(self.job_pods[key].values())
        pg = self.podgroups.get(key)
        plan = execute(job, pods, action, target, now=now, podgroup_phase=pg.phase if pg else "")
        old = job.status
        old_phase = old.phase
        settled = (
            action == SYNC_JOB
            and plan.status.retry_count == old.retry_count
            and plan.status.version == old.version
            and not plan.kill
            and not plan.delete_podgroup
            and pg is not None
            # A sync that moved the phase is re-synced (below); settled when that re-sync is known to be idle.
            and (plan.status.phase == old_phase or resync_is_idle(job, plan))
        )
        job.status = plan.status
        self._touch(key)
        if plan.status.phase != old_phase:
            self.record(
                "JobPhase", job.name, reason=plan.status.phase, message=plan.status.message, namespace=job.namespace
            )
            if plan.finished:
                self.ttl.watch(job)
            # Volcano's job handler re-syncs a job whose phase changed: what moves a Restarting job
            # whose pods were all gone already (evicted, preempted) on to Pending.
            self._request(key, OUT_OF_SYNC)
        for name in plan.kill:
            pod = self.job_pods[key].get(name)
            if pod is not None:
                self._kill(pod)
        if plan.delete_podgroup and pg is not None:
            del self.podgroups[key]
            self._drop_podgroup(key, pg)
            pg = None
        if plan.sync_podgroup and pg is None and job.status.phase not in o.FINISHED_JOB_PHASES:
            pg = make_podgroup(job, now)
            self.podgroups[key] = pg
            self.state.set_podgroup(pg)
            self._dirty = True
        created: list[o.Pod] = []
        job_pods = self.job_pods[key]
        tasks: dict[str, tuple[o.TaskSpec, int]] = {}  # a task's spec and its pods' priority, once per plan
        for task_name, index in plan.create:
            found = tasks.get(task_name)
            if found is None:
                spec = job.spec.task(task_name)
                if spec is None:
                    continue
                class_name = spec.template.spec.priority_class_name or job.spec.priority_class_name
                found = tasks[task_name] = (spec, self.state.priority_of(class_name))
            task, priority = found
            held = f"{job.namespace}/{pod_name(job.name, task_name, index)}"
            if held in self.pods:  # by a pod still stopping (of a deleted job of this name, an operator's):
                self._name_waiters[held] = key  # Kubernetes' AlreadyExists; created once it is gone (`pod_stopped`)
                continue
            pod = make_pod(job, task, index, priority, now)
            self._uid += 1
            pod.metadata.uid = f"{self._uid:08x}"
            self.pods[pod.key] = pod
            job_pods[pod.name] = pod
            if pg is not None:
                self.state.set_pod(pod, pg.key)
            created.append(pod)
        if created:
            self._dirty = True
            # Volcano's pod handler raises PodPending for every pod added: what starts a PodPending timeout.
            for req in requests_for_new_pods(job, list(job_pods.values()), created):
                self._request(key, req)
        if action not in INTERNAL_ACTIONS:
            self.delayed.cancel_scope(key, action, target)
        self._forget_if_done(job)
        if settled:
            self._settled[key] = self._changes.get(key, 0)
        else:
            self._settled.pop(key, None)

    def _drop_podgroup(self, job_key: str, pg: o.PodGroup) -> None:
        """Take a deleted PodGroup out of the scheduler, once none of its pods holds a node any more.

        Pods being killed keep their resources (as Releasing) until the executor says they
        stopped; dropping the group at once would hand those resources out twice."""
        info = self.state.jobs.get(pg.key)
        if info is not None and info.count(OCCUPYING) > 0:
            self._released.setdefault(job_key, set()).add(pg.key)
            self.state.release_podgroup(pg.key)
        else:
            self.state.remove_podgroup(pg.key)

    def restore_stopping(self, job_key: str, pods: list[tuple[o.Pod, int]]) -> None:
        """Put back a deleted job's pods that a previous daemon left stopping on their nodes: each under the
        PodGroup it names (its queue's), released at once, so they hold their resources until they are gone."""
        groups: dict[str, o.PodGroup] = {}
        job_pods = self.job_pods.setdefault(job_key, {})
        for pod, attempt in pods:
            name = pod.metadata.annotations.get(o.GROUP_NAME_KEY) or pod.job
            pg = groups.get(name)
            if pg is None:
                queue = pod.metadata.annotations.get(o.QUEUE_NAME_KEY) or "default"
                meta = ObjectMeta(
                    name=name, namespace=pod.namespace, creation_timestamp=pod.metadata.creation_timestamp
                )
                pg = groups[name] = o.PodGroup(meta, pod.job, min_member=1, queue=queue)
                self.state.set_podgroup(pg)
            self.pods[pod.key] = pod
            job_pods[pod.name] = pod
            self._stopping.add(pod.key)
            self.state.set_pod(pod, pg.key)
            self.history.restore(pod, attempt, running=True)
            self._uid = max(self._uid, uid_number(pod.metadata.uid))
        for pg in groups.values():
            self._drop_podgroup(job_key, pg)
        self._dirty = True

    def _release_podgroup(self, job_key: str) -> None:
        """After a pod of the job left: finish a deferred `_drop_podgroup` if it was the last one on a node."""
        released = self._released.get(job_key)
        if released is None:
            return
        for pg_key in sorted(released):
            info = self.state.jobs.get(pg_key)
            if info is not None and info.count(OCCUPYING) > 0:
                continue
            released.discard(pg_key)
            current = self.podgroups.get(job_key)
            if current is None or current.key != pg_key:  # a re-created group of the same name took the entry over
                self.state.remove_podgroup(pg_key)
        if not released:
            del self._released[job_key]

    def _forget_if_done(self, job: o.Job) -> None:
        """A finished job none of whose pods still runs is no longer the scheduler's business."""
        if job.status.phase not in o.FINISHED_JOB_PHASES:
            return
        pg = self.podgroups.get(job.key)
        if pg is None or pg.key not in self.state.jobs:
            return
        if any(not p.finished for p in self.job_pods[job.key].values()):
            return
        self.state.remove_podgroup(pg.key)

    def _kill(self, pod: o.Pod) -> None:
        if pod.deletion_timestamp is not None:
            return
        pod.deletion_timestamp = self.clock.now()
        self._touch(pod.job_key)
        self._stopping.add(pod.key)
        if pod.node_name and not pod.finished and pod.key not in self.backoff.waiting:
            self.state.set_pod(pod, self._pg_key(pod))
            self.executor.stop(pod)
        else:
            self.pod_stopped(pod.key)

    def _pod_changed(self, pod: o.Pod, old_phase: str | None) -> None:
        key = f"{pod.metadata.namespace}/{pod.job}"
        self._touch(key)
        self.state.set_pod(pod, self._pg_key(pod))
        self._dirty = True
        if key in self._released and pod.finished:  # the last pod of a deleted group holding a node ended
            self._release_podgroup(key)
        job = self.jobs.get(key)
        if job is None:
            return
        self.delayed.cancel_for_pod_phase(pod, pod.status.phase)
        for req in requests_for_pod_change(job, list(self.job_pods[key].values()), old_phase, pod, deleted=False):
            self._request(key, req)

    def _pod_started(self, pod: o.Pod, old_phase: str, restarts: dict[str, int] | None) -> dict[str, int] | None:
        """`_pod_changed` for a pod just bound and Running, given `live_restarts` of its job's pods from the
        previous pod of the same job bound in this run (None: count them); returns them for the next."""
        key = pod.job_key
        self._touch(key)
        self.state.set_pod(pod, self._pg_key(pod))
        self._dirty = True
        job = self.jobs.get(key)
        if job is None:
            return None
        self.delayed.cancel_for_pod_phase(pod, pod.status.phase)
        if restarts is None:
            restarts = live_restarts(self.job_pods[key].values())
        elif old_phase not in LIVE_PHASES:  # it just became live: its restarts count now
            restarts[pod.task] = restarts.get(pod.task, 0) + pod.status.restart_count
        self._request(key, request_for_started_pod(job, restarts, old_phase, pod))
        return restarts

    def _pg_key(self, pod: o.Pod) -> str:
        """The key of the pod's PodGroup in the scheduler: its job's, or the one deleted while its pods still
        held nodes (`_drop_podgroup`), so that such a pod ending gives its node back. A pod of a deleted job
        is not counted in the group of a new job of the same name: the group it names is its own."""
        job_key = f"{pod.metadata.namespace}/{pod.job}"
        pg = self.podgroups.get(job_key)
        if pg is not None and self.job_pods.get(job_key, {}).get(pod.name) is pod:
            return pg.key
        released = self._released.get(job_key)
        if not released:
            return ""
        own = f"{pod.metadata.namespace}/{pod.metadata.annotations.get(o.GROUP_NAME_KEY, '')}"
        return own if own in released else ""


def uid_number(uid: str) -> int:
    """uids are hexadecimal counters: a restored one must not be handed out again."""
    try:
        return int(uid, 16)
    except ValueError:
        return 0
