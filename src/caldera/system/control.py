"""The control plane: objects, job controller, scheduler and executor wired together.

This is the same in every mode; only the executor (fake, local processes) and
what watches the objects change. The flow of one change, as in Kubernetes:

  pod event → controller request → policy → state-machine plan → create/kill pods
            → scheduler cycle → binds and evictions → executor → pod events ...

`settle()` runs that loop until nothing is left to do at the current time; the
controller's steps (request → plan → pods and PodGroups) are `JobReconciler`'s
(reconcile.py), this class owns the objects, the executor's reports and the scheduler's decisions.
Invariants: a pod is bound at most once per incarnation; a pod the controller or
the scheduler asked to stop is removed only when the executor says it stopped,
and until then it holds its node's resources in the scheduler's view (also when
its PodGroup was deleted: the group leaves the scheduler with its last pod); a
deletion the controller did not ask for is reported to the job as PodEvicted.
Timed work (delayed actions, TTLs) sits in heaps, so no step scans every job.

A pod restarted in place (its restartPolicy) starts again once its `RestartBackoff`
says (the kubelet's on the embedded cluster; at once by default): meanwhile it holds
its node, stays Running and says CrashLoopBackOff, and a stop or an eviction removes
it at once (it has no process to wait for).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from caldera.controller import (
    DelayedActions,
    Request,
    make_podgroup,
    requests_for_pod_change,
)
from caldera.controller.events import JOB_TARGET, OUT_OF_SYNC, SYNC_JOB
from caldera.controller.ttl import TtlQueue
from caldera.core import objects as o
from caldera.core.elastic import scaled, with_elastic_defaults
from caldera.core.errors import FieldError, ValidationError
from caldera.core.validation import validate_job_admission
from caldera.scheduler.scheduler import Scheduler
from caldera.scheduler.state import ClusterState
from caldera.system.backoff import RestartBackoff
from caldera.system.decisions import apply_cycle
from caldera.system.executor import Executor
from caldera.system.foreign import ForeignGroups
from caldera.system.history import Attempts, PodAttempt
from caldera.system.reconcile import JobReconciler, uid_number
from caldera.utils.clock import Clock

MAX_ROUNDS = 10_000  # guard against a livelock in one settle(): far above any real cascade
CRASH_LOOP = "CrashLoopBackOff"  # the reason of a pod waiting out its restart back-off, as the kubelet says it


class ControlPlane(JobReconciler, ForeignGroups):
    def __init__(
        self,
        scheduler: Scheduler,
        executor: Executor,
        clock: Clock,
        restart_backoff: RestartBackoff | None = None,
        *,
        keep_attempts: bool = True,
    ) -> None:
        self.scheduler = scheduler
        self.executor = executor
        self.clock = clock
        self.backoff = restart_backoff if restart_backoff is not None else RestartBackoff(initial=0.0)
        self.state = ClusterState()
        self.nodes: dict[str, o.Node] = {}
        self.queues: dict[str, o.Queue] = {"default": o.Queue(o.ObjectMeta(name="default", namespace=""))}
        self.priority_classes: dict[str, o.PriorityClass] = {}
        self.jobs: dict[str, o.Job] = {}
        self.jobs_version = 0  # bumped when a job is added or removed: who compares job sets compares only then
        self.podgroups: dict[str, o.PodGroup] = {}  # by job key
        self.pods: dict[str, o.Pod] = {}
        self.job_pods: dict[str, dict[str, o.Pod]] = {}  # job key → pod name → pod
        self.delayed = DelayedActions()
        self.events: list[o.Event] = []
        self.history = Attempts(keep_finished=keep_attempts)  # a daemon keeps none: they would pile up
        self.attempts: list[PodAttempt] = self.history.finished  # ended attempts, in the order they ended
        self.running: dict[str, PodAttempt] = self.history.running  # pod key → the attempt in progress
        self._requests: deque[tuple[str, Request]] = deque()
        self._stopping: set[str] = set()  # pods the control plane asked to stop (not evictions by others)
        self._dirty = True  # something changed since the last scheduling cycle
        # Job keys whose job, podgroup or pods changed (or went) since the owner last took them
        # (`take_touched`): what the embedded cluster writes to its store after a turn.
        self._touched: set[str] = set()
        self._changes: dict[str, int] = {}  # job key → how many times it was touched (`_touch`)
        self._settled: dict[str, int] = {}  # job key → its `_changes` after a sync that left it settled
        self.ttl = TtlQueue()  # finished jobs to delete later
        # job key → keys of its PodGroups deleted while pods of them still release resources (a job deleted and
        # submitted again, then deleted again, has two)
        self._released: dict[str, set[str]] = {}
        # pod key → key of the job whose pod of that name waits for the pod holding the name to go (`_run`)
        self._name_waiters: dict[str, str] = {}
        self._uid = 0
        self.on_event: Callable[[o.Event], None] | None = None
        # (pod, exit code or None if it never ran, whether the plane asked for it): a pod was removed
        self.on_pod_gone: Callable[[o.Pod, int | None, bool], None] | None = None

    # ------------------------------------------------------------ inputs

    def add_node(self, node: o.Node) -> None:
        self.nodes[node.name] = node
        self.state.set_node(node)
        self._dirty = True

    def add_nodes(self, nodes: list[o.Node]) -> None:
        for n in nodes:
            self.nodes[n.name] = n
        self.state.set_nodes(nodes)
        self._dirty = True

    def add_queue(self, queue: o.Queue) -> None:
        self.queues[queue.name] = queue
        self.state.set_queue(queue)
        self._dirty = True

    def add_priority_class(self, pc: o.PriorityClass) -> None:
        self.priority_classes[pc.name] = pc
        self.state.set_priority_classes(self.priority_classes.values())

    def submit(self, job: o.Job, *, valid: bool = False) -> None:
        """Admit a job (Volcano's webhooks: defaults, then validation) and start reconciling it; ValidationError if refused.

        `valid`: the job passed `validate_job` as it is (a manifest reader validated it): unless the defaults
        change it, only the rules against the cluster (queue, PriorityClasses) are checked again."""
        tasks, annotations = job.spec.tasks, len(job.metadata.annotations)
        with_elastic_defaults(job)
        if valid:  # defaults that changed the job are validated with it
            valid = annotations == len(job.metadata.annotations) and all(
                a is b for a, b in zip(tasks, job.spec.tasks, strict=True)
            )
        errors = validate_job_admission(job, self.queues, self.priority_classes, valid=valid)
        if errors:
            raise ValidationError(errors, f"job {job.name}")
        if job.key in self.jobs:
            raise ValidationError([FieldError("metadata.name", f"job {job.key} already exists")], f"job {job.name}")
        self._uid += 1
        now = self.clock.now()
        job.metadata.uid = job.metadata.uid or f"{self._uid:08x}"
        job.metadata.creation_timestamp = now
        job.status = o.JobStatus(phase=o.PENDING, min_available=job.spec.min_available, last_transition_time=now)
        self.jobs[job.key] = job
        self.jobs_version += 1
        self.job_pods[job.key] = {}
        self.record("JobPhase", job.name, reason=o.PENDING, message="submitted", namespace=job.namespace)
        self._request(job.key, OUT_OF_SYNC)

    def command(self, job_key: str, action: str) -> None:
        """A user's command (AbortJob, ResumeJob, ...), as vcctl's Command objects."""
        job = self.jobs.get(job_key)
        ns, _, name = job_key.rpartition("/")
        self.record("Command", name, reason=action, message="" if job else "no such job", namespace=ns or "default")
        self._request(job_key, Request(event="CommandIssued", action=action))

    def scale(self, job_key: str, task: str, replicas: int) -> None:
        """Change an elastic task's replicas (Volcano's JobUpdated); ValidationError outside its range."""
        job = self.jobs[job_key]
        job.spec = scaled(job, task, replicas)
        self.record(
            "Scaled", job.name, reason="Scaled", message=f"{task}: {replicas} replicas", namespace=job.namespace
        )
        self._request(job_key, OUT_OF_SYNC)

    def remove_queue(self, name: str) -> None:
        self.queues.pop(name, None)
        self.state.remove_queue(name)
        self._dirty = True

    def restore(self, job: o.Job, podgroup: o.PodGroup | None, pods: list[tuple[o.Pod, int]]) -> None:
        """Put back a job, its podgroup and its pods (with their attempt numbers) as a previous daemon left them.

        Nothing is recorded as happening; the job is re-synced, as after any change. Pods still on nodes
        whose PodGroup was deleted (a job aborted while they stop) are accounted under that group, dropped
        again at once: they hold their resources until they are gone (`_drop_podgroup`), as before."""
        self.jobs[job.key] = job
        self.jobs_version += 1
        self.job_pods[job.key] = {}
        self.ttl.watch(job)
        self._uid = max(self._uid, uid_number(job.metadata.uid))
        group = podgroup
        if group is None and any(pod.node_name and not pod.finished for pod, _ in pods):
            group = make_podgroup(job, self.clock.now())
        if group is not None:
            self.state.set_podgroup(group)
        if podgroup is not None:
            self.podgroups[job.key] = podgroup
        for pod, attempt in pods:
            self.pods[pod.key] = pod
            self.job_pods[job.key][pod.name] = pod
            self._uid = max(self._uid, uid_number(pod.metadata.uid))
            if pod.deletion_timestamp is not None:
                self._stopping.add(pod.key)
            if group is not None:
                self.state.set_pod(pod, group.key)
            self.history.restore(pod, attempt, running=bool(pod.node_name) and not pod.finished)
        if group is not None and podgroup is None:
            self._drop_podgroup(job.key, group)
        self._request(job.key, OUT_OF_SYNC)
        self._dirty = True

    def is_stopping(self, key: str) -> bool:
        """Whether the control plane asked this pod to stop (its end is a deletion, not an exit)."""
        return key in self._stopping

    # ------------------------------------------------------------ from the executor

    def pod_exited(self, key: str, exit_code: int, final: bool = False) -> None:
        """The pod's process ended on its own; restart it in place if its restartPolicy says so, unless
        `final`: on Kubernetes the kubelet restarts a container in place without the pod's phase ever
        showing it, so a pod whose phase became Succeeded or Failed there (evicted, past its deadline) is
        over whatever its restartPolicy."""
        pod = self.pods.get(key)
        # A pod being deleted is going anyway: its exit is not restarted nor reported as a phase.
        if pod is None or pod.finished or key in self._stopping or pod.deletion_timestamp is not None:
            return
        self._touch(pod.job_key)
        policy = pod.spec.restart_policy
        restart = not final and (policy == "Always" or (policy == "OnFailure" and exit_code != 0))
        phase = o.POD_SUCCEEDED if exit_code == 0 else o.POD_FAILED
        self.history.end(key, phase, exit_code, self.clock.now())
        if restart:
            pod.status.exit_code = exit_code
            now = self.clock.now()
            delay = self.backoff.delay(key, now)
            if delay <= 0:
                self._restart(pod, now)
                return
            self.backoff.wait(key, now, delay)
            pod.status.reason = CRASH_LOOP
            pod.status.message = f"back-off {delay:g}s restarting failed container (exit code {exit_code})"
            self.record("BackOff", pod.name, pod.node_name, "BackOff", pod.status.message, pod.namespace)
            return
        old = pod.status.phase
        pod.status.phase = phase
        pod.status.exit_code = exit_code
        pod.status.finish_time = self.clock.now()
        self.record("PodPhase", pod.name, pod.node_name, phase, f"exit code {exit_code}", pod.namespace)
        self._pod_changed(pod, old)

    def _restart(self, pod: o.Pod, ended: float) -> None:
        """Start the pod's process again, in place (same node, same name)."""
        now = self.clock.now()
        pod.status.restart_count += 1
        pod.status.reason = pod.status.message = ""
        self.backoff.restarted(pod.key, ended, now)
        self.record(
            "PodRestart", pod.name, pod.node_name, "Restarted", f"exit code {pod.status.exit_code}", pod.namespace
        )
        self.history.begin(pod, pod.node_name, now)
        self.executor.start(pod, self.nodes[pod.node_name])
        self._pod_changed(pod, o.POD_RUNNING)

    def pod_stopped(self, key: str, exit_code: int | None = None) -> None:
        """A pod asked to stop (or lost with its node) is gone: remove it.

        `exit_code` is how its process ended, when the executor knows; else a run cut short
        ends as a SIGTERM'd process does (143)."""
        pod = self.pods.get(key)
        if pod is None:
            return
        asked = key in self._stopping
        self._stopping.discard(key)
        code: int | None = None  # None: it never ran
        if pod.finished or key in self.backoff.waiting:
            code = pod.status.exit_code
        elif pod.node_name:
            code = 143 if exit_code is None else exit_code
        self.backoff.forget(key)
        if code is not None:
            self.history.end(key, o.POD_SUCCEEDED if code == 0 else o.POD_FAILED, code, self.clock.now())
        del self.pods[key]
        waiter = self._name_waiters.pop(key, None)
        if waiter is not None and waiter in self.jobs:  # its pod of this name can be created now
            self._request(waiter, OUT_OF_SYNC)
        job_key = f"{pod.metadata.namespace}/{pod.job}"
        self._touch(job_key)
        job_pods = self.job_pods.get(job_key, {})
        own = job_pods.get(pod.name) is pod  # else a pod of a deleted job that a new one of its name replaced
        if own:
            del job_pods[pod.name]
        self.state.remove_task(key)
        self._dirty = True
        self._release_podgroup(job_key)
        self.record("PodDeleted", pod.name, pod.node_name, "Deleted", "", pod.namespace)
        if self.on_pod_gone is not None:
            self.on_pod_gone(pod, code, asked)
        job = self.jobs.get(job_key)
        if job is None or not own:  # deleted with its job (which a new one of its name may have replaced)
            self.history.forget(key)
            self._forget_deleted(job_key)
            return
        self._forget_if_done(job)
        pods = list(self.job_pods[job.key].values())
        for req in requests_for_pod_change(job, pods, pod.status.phase, pod, deleted=not asked):
            self._request(job.key, req)
        if asked:
            self._request(job.key, OUT_OF_SYNC)

    def evict(self, key: str, reason: str = "Evicted", message: str = "", kind: str = "Evict") -> None:
        """Someone other than the controller deletes the pod (a fault, a node drain, the scheduler)."""
        pod = self.pods.get(key)
        if pod is None or pod.deletion_timestamp is not None:
            return
        pod.deletion_timestamp = self.clock.now()
        self._touch(pod.job_key)
        self.state.set_pod(pod, self._pg_key(pod))
        self.record(kind, pod.name, pod.node_name, reason, message, pod.namespace)
        if key in self.backoff.waiting:  # no process to stop
            self.pod_stopped(key)
        else:
            self.executor.stop(pod)

    def node_down(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            return
        node.ready = False
        self.state.set_node(node)
        self.record("NodeDown", name, name, "NodeLost", "", "")
        for pod in [p for p in self.pods.values() if p.node_name == name]:
            self.evict(pod.key, "NodeLost", f"node {name} was lost")
        self._dirty = True

    # ------------------------------------------------------------ the loop

    def settle(self) -> None:
        """Reconcile and schedule until nothing changes at the current time."""
        for _ in range(MAX_ROUNDS):
            for key, ended in self.backoff.due(self.clock.now()) if self.backoff.waiting else ():
                pod = self.pods.get(key)
                if pod is not None and pod.deletion_timestamp is None:
                    self._restart(pod, ended)
            for entry in self.delayed.due(self.clock.now()):
                self._run(entry.key, entry.action, entry.target)
            if self._requests:
                # Requests are resolved one by one (timers and policies see each), but the
                # SyncJob they mostly resolve to is idempotent: it runs once per job, after the rest.
                syncs: dict[str, None] = {}
                while self._requests:
                    key, req = self._requests.popleft()
                    self._handle(key, req, syncs)
                for key in syncs:
                    self._run(key, SYNC_JOB, JOB_TARGET)
                continue
            state = self.state
            if not self._dirty or not (state.waiting or state.pending_groups or state.dirty_jobs):
                return
            self._dirty = False
            apply_cycle(self, self.scheduler.run_cycle(self.state, self.clock.now()))
        raise RuntimeError("the control plane did not settle (a livelock between controller and scheduler)")

    def wake(self) -> None:
        """Schedule again at the next settle though no object changed: scheduler orders that move with
        time (the las plugin's levels) call for it when `state.order_changes` says."""
        self._dirty = True

    def next_wakeup(self) -> float | None:
        """When timed work (delayed actions, TTLs, restarts after a back-off) is next due."""
        due = (self.delayed.next_due(), self.ttl.next_due(self.jobs), self.backoff.next_due())
        times = [t for t in due if t is not None]
        return min(times) if times else None

    def expire_ttls(self, delete: Callable[[str], None] | None = None) -> None:
        """Delete the finished jobs whose ttlSecondsAfterFinished has passed, earliest first, with `delete`
        (the owner's whole deletion, e.g. the daemon's, which also frees host ports) or `delete_job`."""
        for key in self.ttl.due(self.clock.now(), self.jobs):
            (delete or self.delete_job)(key)

    def delete_job(self, key: str) -> None:
        job = self.jobs.pop(key, None)
        if job is None:
            return
        self.jobs_version += 1
        self._settled.pop(key, None)
        self._touch(key)
        self.delayed.drop_job(key)
        for pod in list(self.job_pods.get(key, {}).values()):
            self._kill(pod)
        pg = self.podgroups.pop(key, None)
        if pg is not None:
            self._drop_podgroup(key, pg)
        self.record("JobDeleted", job.name, reason="Deleted", namespace=job.namespace)
        self._dirty = True
        self._forget_deleted(key)

    def _forget_deleted(self, job_key: str) -> None:
        """Once a deleted job's last pod is gone, nothing is kept under its key (a daemon lives long)."""
        if job_key not in self.jobs and not self.job_pods.get(job_key):
            self.job_pods.pop(job_key, None)
            self._changes.pop(job_key, None)

    # ------------------------------------------------------------ history

    def attempts_of(self, pod_key: str) -> int:
        """How many attempts the pod of this name has had (the next attempt's number)."""
        return self.history.next_number(pod_key)

    def record(
        self, kind: str, obj: str, node: str = "", reason: str = "", message: str = "", namespace: str = "default"
    ) -> None:
        """Record an event (also what is seen from outside: a fault, a process the executor lost)."""
        ev = o.Event(self.clock.now(), kind, obj, node, reason, message, namespace)
        self.events.append(ev)
        if self.on_event is not None:
            self.on_event(ev)
