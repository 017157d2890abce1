"""The embedded cluster: the control plane on local processes, durable in SQLite, behind one loop thread.

One thread (the control loop, `loop.py`) owns the control plane. API calls, reads and
writes alike, and process events from the executor are closures put on its
inbox; after each batch it settles the plane (controller + scheduler), writes what
changed to the store in one transaction (`statestore.py`), and only then answers the
callers and hands the process starts and stops the turn decided to the starter thread
(`effects.py`), which does them in order. So every caller sees a consistent state, what is
in the store is what the loop decided, and an answered request survives a `kill -9` of the
daemon (a start still queued then is done by the next daemon).

On start, the state is read back and the pods' processes adopted (`adoption.py`): running
ones are watched again, ends that came meanwhile are recorded as if just now, a pod whose
saved start never happened (a kill between the commit and the start) is started now.

Pods the plane removed after they ran are kept for people (`EndedPods`) with how they
ended, stored with their job's other pods, until the job is deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TypeVar

from caldera import __version__
from caldera.backends.local import LocalExecutor, ProcessEvent
from caldera.backends.sqlite_store import SqliteStore
from caldera.core import objects as o
from caldera.core.elastic import check_scale, elastic_range, scale_target
from caldera.core.errors import FieldError, ValidationError
from caldera.core.manifest import parse_object
from caldera.core.resources import GPU
from caldera.scheduler.config import SchedulerConfig
from caldera.scheduler.scheduler import Scheduler
from caldera.system import machine, persist
from caldera.system.admission import check_commands, check_data, check_plugins, check_size
from caldera.system.adoption import adopt
from caldera.system.api import JSON, Conflict, NotFound
from caldera.system.backoff import RestartBackoff
from caldera.system.clusterviews import ClusterViews
from caldera.system.control import ControlPlane
from caldera.system.describe import describe
from caldera.system.effects import HeldEffects
from caldera.system.elastic import ElasticService
from caldera.system.ended import EndedPods
from caldera.system.jobextras import JobExtras, StillDeleting
from caldera.system.loop import ControlLoop, Turn
from caldera.system.nodeplan import NodePlan
from caldera.system.runtime import SUBMIT_DIR, GpuBook, LocalRuntime
from caldera.system.statestore import PlaneStore
from caldera.system.tensorboard import TensorBoards
from caldera.system.views import job_summary, node_summaries
from caldera.system.waiting import explanation_json
from caldera.system.watch import ChangeFeed
from caldera.utils.clock import Clock, SystemClock

log = logging.getLogger("caldera.daemon")
T = TypeVar("T")
USER_ACTIONS = ("AbortJob", "ResumeJob")


class EmbeddedCluster:
    def __init__(
        self,
        home: Path,
        *,
        nodes: int | None = None,
        cpus_per_node: str | None = None,
        memory_per_node: str | None = None,
        gpus_per_node: int | None = None,
        clock: Clock | None = None,
        grace: float = 10.0,
        elastic_server: str | None = None,
        node_labels: Sequence[str] = (),
        node_taints: Sequence[str] = (),
        scheduler: SchedulerConfig | None = None,
    ) -> None:
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.clock = clock or SystemClock()
        self.store = SqliteStore(home / "state.db")
        self.executor = LocalExecutor(home, report=self._on_process, clock=self.clock, grace=grace)
        self.held = HeldEffects(self.executor, self._on_process, self.clock)
        self.node_plan = NodePlan(
            self.store, nodes, cpus_per_node, memory_per_node, gpus_per_node, node_labels, node_taints
        )
        node_list = self.node_plan.nodes()
        gpus = GpuBook(
            {n.name: int(n.allocatable.get(GPU, 0.0) / 1000) for n in node_list},
            {n.name: int(n.labels.get(machine.GPU_OFFSET_LABEL, "0")) for n in node_list},
        )
        self.runtime = LocalRuntime(home, self.held, self._job_of, gpus, self._notify)
        self.elastic = ElasticService(home, elastic_server)
        self.plane = ControlPlane(
            Scheduler(scheduler),
            self.runtime,
            self.clock,
            RestartBackoff(),
            keep_attempts=False,  # as the kubelet
        )
        self.plane.add_nodes(node_list)
        self.ended = EndedPods()
        self.plane.on_pod_gone = self._pod_gone
        self.feed = ChangeFeed(self.store)
        boards = TensorBoards(home, self.runtime.ports, self.clock, self._notify)
        self.extras = JobExtras(home, self.plane, self.runtime, self.held, boards, self.clock)
        self.views = ClusterViews(self.plane, self.runtime, self.store, self.clock, self._read)
        self.state = PlaneStore(self.store, self.plane, self.runtime, self.ended)
        self.loop = ControlLoop(Turn(self._settle, self._commit, self.held.release, self.plane.next_wakeup), self.clock)
        self.url = ""

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self.elastic.start()
        self.runtime.elastic_server = self.elastic.endpoint
        self.runtime.serve_zygotes()
        self.state.restore()
        self.extras.forget_orphans(self.store)
        adopt(self.executor, self.plane, self.runtime, self._process_event, self._notify, self.clock)
        self.extras.start()
        self.plane.settle()
        self._commit()
        self.held.release()
        self.loop.start()

    def shutdown(self, stop_pods: bool = True) -> None:
        """Stop the loop (the store keeps what it decided); with `stop_pods`, then every pod's processes.

        The loop stops first so the controller does not answer the stops by re-creating
        pods; on the next start, pods found gone are recorded as killed and each job's
        policies decide what follows (a RestartJob job restarts)."""
        self.loop.stop()
        self.held.drain()  # the starts and stops the loop decided, done: the executor sees every pod
        if stop_pods:
            self.executor.stop_all(grace=10.0)
        self.extras.shutdown(stop_pods)
        self.elastic.stop(stop_server=stop_pods)
        self.runtime.close_zygotes(stop=stop_pods)
        self.executor.close()
        self.store.close()
        if self.state.mismatches:  # CALDERA_VERIFY_STORE=1 (the tests): a change the store missed is a bug
            raise AssertionError(f"the store missed changes: {self.state.mismatches[:3]}")

    def _settle(self) -> None:
        self.plane.expire_ttls(self._delete)
        self.plane.settle()
        self.extras.sweep()

    def _commit(self) -> None:
        if self.state.write():
            self.feed.published()

    def _call(self, fn: Callable[[], T], timeout: float = 60.0, *, writes: bool = True) -> T:
        return self.loop.call(fn, timeout, writes=writes)

    def _read(self, fn: Callable[[], T]) -> T:
        """`fn` on the loop, which changes nothing: it is never refused for want of a writable store."""
        return self._call(fn, writes=False)

    # ------------------------------------------------------------ process events

    def _on_process(self, ev: ProcessEvent) -> None:
        """Called on the executor's threads: hand the event to the loop."""
        self.loop.post(lambda: self._process_event(ev))

    def _process_event(self, ev: ProcessEvent) -> None:
        if ev.kind == "running":
            return
        self.runtime.released(ev.key)
        pod = self.plane.pods.get(ev.key)
        job = self._job_of(pod.job_key) if pod is not None else None
        if pod is not None and job is not None and elastic_range(job, pod.task) is not None:
            self.elastic.pod_ended(job, pod.name)  # its launcher's keys go now, not when its lease runs out
        if ev.kind == "stopped" or self.plane.is_stopping(ev.key):
            self.plane.pod_stopped(ev.key, ev.exit_code)
        elif ev.exit_code is not None:
            self.plane.pod_exited(ev.key, ev.exit_code)

    def _pod_gone(self, pod: o.Pod, exit_code: int | None, asked: bool) -> None:
        job = self.plane.jobs.get(pod.job_key)
        if job is not None:
            attempt = self.runtime.attempts.get(pod.key, 0)
            self.ended.gone(pod, job.metadata.uid, exit_code, asked, self.clock.now(), attempt)

    def _notify(self, namespace: str, obj: str, reason: str, message: str) -> None:
        self.plane.record(reason, obj, reason=reason, message=message, namespace=namespace)

    # ------------------------------------------------------------ writes

    def apply(self, manifest: JSON, submit_dir: str | None = None) -> JSON:
        change = self._admitted(manifest, submit_dir)
        # A deleted job of the same name may still be stopping: its name is free once it is gone.
        return self.extras.when_clean(lambda: self._call(change), timeout=25.0)

    def apply_later(self, manifest: JSON, submit_dir: str | None = None) -> Future[JSON]:
        """`apply` without waiting (`api.AppliesLater`): the manifest is checked on the caller's thread, the
        change made on the loop; the future's result comes once it is committed. A job whose name a deleted
        one still holds fails with StillDeleting at once (`apply` waits for the name instead)."""
        return self.loop.later(self._admitted(manifest, submit_dir))

    def _admitted(self, manifest: JSON, submit_dir: str | None) -> Callable[[], JSON]:
        """The manifest parsed and checked (ValidationError if refused): the change to make on the loop."""
        obj = parse_object(manifest, "request")
        if isinstance(obj, o.Queue):
            return lambda: self._apply_queue(obj)
        if isinstance(obj, o.PriorityClass):
            return lambda: self._apply_priority_class(obj)
        if isinstance(obj, o.Job):
            job = obj
            if submit_dir:
                job.metadata.annotations.setdefault(SUBMIT_DIR, submit_dir)
            check_size(job)  # first: the other checks look at every task
            check_commands(job, submit_dir)
            check_data(job)
            check_plugins(job)
            if why := self.elastic.check(job):
                raise ValidationError([FieldError("spec.tasks", why)], f"job {job.name}")
            return lambda: self._submit(job)
        raise ValidationError([FieldError("kind", f"{obj.__class__.__name__} objects cannot be applied")], "request")

    def _apply_queue(self, queue_obj: o.Queue) -> JSON:
        self.plane.add_queue(queue_obj)
        return queue_obj.to_dict()

    def _apply_priority_class(self, pc: o.PriorityClass) -> JSON:
        self.plane.add_priority_class(pc)
        return pc.to_dict()

    def _submit(self, job: o.Job) -> JSON:
        if job.key in self.plane.jobs:
            raise Conflict(f"job {job.key} already exists (delete it first)")
        if self.extras.busy(job.key):
            raise StillDeleting(f"job {job.key} was deleted and its pods are still stopping: try again shortly")
        self.plane.submit(job, valid=True)  # parse_object validated it (`_admitted`): not again on the loop
        self.extras.created(job)
        self.elastic.job_created(job)
        return persist.job_record(job)

    def delete_job(self, namespace: str, name: str) -> None:
        def run() -> None:
            key = f"{namespace}/{name}"
            if key not in self.plane.jobs:
                raise NotFound(f"job {key} not found")
            self._delete(key)

        self._call(run)

    def _delete(self, key: str) -> None:
        """Delete a job (a user's delete or its TTL): its pods stop, its rendezvous and host ports go with it."""
        self.elastic.job_gone(self.plane.jobs[key])
        self.plane.delete_job(key)
        self.runtime.job_deleted(key)

    def scale_job(self, namespace: str, name: str, replicas: int, task: str | None = None) -> JSON:
        """Resize an elastic task: the launchers learn the wanted size first, then pods come or go."""
        job = self._read(lambda: self._job(namespace, name))
        task = scale_target(job, task)
        errors = check_scale(job, task, replicas)
        if errors:
            raise ValidationError(errors, f"scale {name}")
        self.elastic.set_target(job, replicas)

        def run() -> JSON:
            self.plane.scale(job.key, task, replicas)
            return self._summary(job)

        return self._call(run)

    def command(self, namespace: str, name: str, action: str) -> None:
        if action not in USER_ACTIONS:
            raise ValidationError([FieldError("action", f"must be one of {', '.join(USER_ACTIONS)}")], "command")

        def run() -> None:
            key = f"{namespace}/{name}"
            if key not in self.plane.jobs:
                raise NotFound(f"job {key} not found")
            self.plane.command(key, action)

        self._call(run)

    def set_queue_state(self, name: str, state: str) -> JSON:
        if state not in (o.QUEUE_OPEN, o.QUEUE_CLOSED):
            raise ValidationError([FieldError("state", "must be Open or Closed")], "queue")

        def run() -> JSON:
            q = self.plane.queues.get(name)
            if q is None:
                raise NotFound(f"queue {name} not found")
            self.plane.add_queue(o.Queue(q.metadata, q.spec, state))
            return self.plane.queues[name].to_dict()

        return self._call(run)

    def delete_queue(self, name: str) -> None:
        def run() -> None:
            if name == "default":
                raise Conflict("the default queue cannot be deleted")
            if name not in self.plane.queues:
                raise NotFound(f"queue {name} not found")
            users = sorted(j.key for j in self.plane.jobs.values() if j.spec.queue == name)
            if users:
                raise Conflict(f"queue {name} still has jobs: {', '.join(users)}")
            self.plane.remove_queue(name)

        self._call(run)

    # ------------------------------------------------------------ reads

    def list_jobs(self, namespace: str | None = None) -> list[JSON]:
        return self._read(
            lambda: [
                self._summary(j)
                for j in sorted(self.plane.jobs.values(), key=lambda j: j.key)
                if namespace is None or j.namespace == namespace
            ]
        )

    def get_job(self, namespace: str, name: str) -> JSON:
        return self._read(lambda: self._summary(self._job(namespace, name)))

    def describe_job(self, namespace: str, name: str) -> JSON:
        def run() -> JSON:
            job = self._job(namespace, name)
            return describe(self.store, self.plane, self.state.events_saved, job, self._summary(job))

        return self._read(run)

    def explain_job(self, namespace: str, name: str) -> JSON:
        return self._call(lambda: explanation_json(self.plane, self._job(namespace, name)))

    def list_queues(self) -> list[JSON]:
        return self._read(lambda: [q.to_dict() for q in sorted(self.plane.queues.values(), key=lambda q: q.name)])

    def get_queue(self, name: str) -> JSON:
        def run() -> JSON:
            q = self.plane.queues.get(name)
            if q is None:
                raise NotFound(f"queue {name} not found")
            return q.to_dict()

        return self._read(run)

    def list_nodes(self) -> list[JSON]:
        return self._read(lambda: node_summaries(self.plane))

    def patch_node(
        self, name: str, labels: Mapping[str, str | None] | None = None, taints: list[JSON] | None = None
    ) -> JSON:
        def run() -> JSON:
            self.plane.add_node(self.node_plan.patch(name, labels, taints))
            self.state.nodes_changed = True
            return next(n for n in node_summaries(self.plane) if n["name"] == name)

        return self._call(run)

    def list_priority_classes(self) -> list[JSON]:
        return self._call(lambda: [pc.to_dict() for _, pc in sorted(self.plane.priority_classes.items())])

    def events(self, namespace: str | None = None, objects: tuple[str, ...] = (), since: int = 0) -> list[JSON]:
        return self.store.events(namespace, objects, since)

    def changes(
        self, kinds: tuple[str, ...], namespace: str | None = None, since: int | None = None, timeout: float = 0.0
    ) -> JSON:
        return self.feed.changes(kinds, namespace, since, timeout)

    def pod_log(self, namespace: str, pod: str) -> str:
        path = self.home / "pods" / namespace / pod / "log"
        if not path.exists():
            raise NotFound(f"pod {namespace}/{pod} has no log (it has not started)")
        return str(path)

    def info(self) -> JSON:
        return {
            "version": __version__,
            "home": str(self.home),
            "nodes": len(self.plane.nodes),
            "listening": self.url,
            "elasticServer": self.elastic.endpoint,
            "resourceVersion": self.store.latest(),
        }

    def overview(self) -> JSON:
        return self.views.overview()

    def allocations(self, node: str | None = None, pods_up_to: int | None = None) -> JSON:
        return self.views.allocations(node, pods_up_to)

    def job_table(self) -> JSON:
        return self.views.job_table()

    def timeline(
        self,
        namespace: str | None = None,
        job: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> JSON:
        return self.views.timeline(namespace, job, since, until)

    # ------------------------------------------------------------ views

    def _job(self, namespace: str, name: str) -> o.Job:
        job = self.plane.jobs.get(f"{namespace}/{name}")
        if job is None:
            raise NotFound(f"job {namespace}/{name} not found")
        return job

    def _summary(self, job: o.Job) -> JSON:
        ended = self.ended.of_job(job, self.plane.job_pods.get(job.key, {}))
        return job_summary(self.plane, self.runtime, job, ended, self.extras.tensorboards.url(job.key))

    def _job_of(self, key: str) -> o.Job | None:
        return self.plane.jobs.get(key)
