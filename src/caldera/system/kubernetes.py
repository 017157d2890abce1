"""Kubernetes mode: the control plane fed by watch caches of the API server, writing back what it decided.

    watch caches (Informer per kind) → inbox → one loop thread: the control plane (controller +
    scheduler, the same code as the embedded cluster and the simulator) → pods (KubePods:
    create bound, bind, delete), status (StatusWriter: Jobs, PodGroups, Queues), Events

One replica acts: `run()` first takes the Lease (`backends.kube.lease`, unless told not to), then
lists every kind and rebuilds the plane from what the API server holds (jobs with their status,
podgroups, pods: `kuberestore`), then applies changes as the watches bring them. A replica that
loses its Lease stops acting at once (`LeaderLost`); a standby takes over and rebuilds the same way.

Jobs: a new Job gets Volcano's webhook defaults in memory (queue `default`, maxRetry 3, ...) and
the same admission checks as on the embedded cluster; one the controller refuses (a queue that does
not exist or is closed, an unknown priority class, ...) gets status Failed with reason Rejected and a
Warning event, and never starts. Jobs naming another scheduler are left alone. Commands
(`bus.volcano.sh`, as vcctl sends them, the target in `target`) are applied and deleted. Pods of other
schedulers hold their node's resources in the scheduler's view.

Invariants: only the loop thread touches the plane; nothing is written before the first full list
of every kind was applied (so a restarted controller never re-creates or re-binds what exists);
a malformed object is reported and skipped, never ends the loop.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import queue
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from caldera.backends.kube.client import JSON, KubeClient, KubeError, NotFound, resource_path
from caldera.backends.kube.convert import (
    job_from_api,
    job_status_from_api,
    node_from_api,
    pod_requests,
    priority_class_from_api,
    queue_from_api,
    to_time,
)
from caldera.backends.kube.informer import Informer, object_key
from caldera.backends.kube.lease import Elector, LeaseTimes
from caldera.backends.kube.recorder import EventRecorder, ObjectRef
from caldera.controller import podgroup_name
from caldera.core import objects as o
from caldera.core.elastic import with_elastic_defaults
from caldera.core.errors import CalderaError, FieldError, ValidationError
from caldera.core.resources import add, sub
from caldera.scheduler.scheduler import Scheduler
from caldera.system.control import ControlPlane
from caldera.system.kubeevents import PlaneEvents
from caldera.system.kubepods import KubePods
from caldera.system.kuberestore import owned_by, restored_podgroup, restored_pods
from caldera.system.kubestatus import StatusWriter
from caldera.utils.clock import Clock, SystemClock

log = logging.getLogger("caldera.kube")
KINDS: dict[str, tuple[str, str]] = {
    "nodes": ("v1", "nodes"),
    "priorityclasses": ("scheduling.k8s.io/v1", "priorityclasses"),
    "queues": (o.SCHEDULING_API, "queues"),
    "podgroups": (o.SCHEDULING_API, "podgroups"),
    "jobs": (o.JOB_API, "jobs"),
    "commands": ("bus.volcano.sh/v1alpha1", "commands"),
    "pods": ("v1", "pods"),
}
REJECTED = "Rejected"
GRACE = 3.0  # seconds a new job waits for a queue or PriorityClass it names to be seen
QUEUE_ACTIONS = {"OpenQueue": o.QUEUE_OPEN, "CloseQueue": o.QUEUE_CLOSED}  # vcctl queue operate --action
VOLCANO = "volcano"  # Jobs naming Volcano's scheduler are caldera's too: it replaces Volcano
LEASE_NAME = "caldera-controller"


def _may_be_on_its_way(error: FieldError) -> bool:
    """A rule broken only because an object the job names was not seen yet (its watch event may be late)."""
    return (error.path == "spec.queue" and "does not exist" in error.rule) or (
        error.path.endswith("priorityClassName") and "no PriorityClass" in error.rule
    )


class LeaderLost(CalderaError):
    """This replica no longer holds the Lease: it must stop acting."""


@dataclass(frozen=True, slots=True)
class Settings:
    scheduler_name: str = "caldera"
    elastic_server: str = ""
    leader_election: bool = True
    lease_namespace: str = "default"
    identity: str = ""
    lease_times: LeaseTimes = field(default_factory=LeaseTimes)
    workers: int = 16  # concurrent requests when writing
    watch_timeout: int = 300  # seconds a watch lasts before it is opened again
    read_timeout: float = 90.0  # a watch silent this long (no event, no bookmark) is dead


class KubeController:
    def __init__(self, kube: KubeClient, settings: Settings = Settings(), clock: Clock | None = None) -> None:
        self.kube = kube
        self.settings = settings
        self.clock = clock or SystemClock()
        self.identity = settings.identity or f"{socket.gethostname()}-{os.getpid()}"
        self.pool = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="caldera-write")
        self.pods = KubePods(kube, self.pool, settings.scheduler_name, self._job_object, self._warn, self.clock.now)
        self.pods.elastic_server = settings.elastic_server
        self.plane = ControlPlane(Scheduler(), self.pods, self.clock)
        self.status = StatusWriter(kube, self.pool)
        self.recorder = EventRecorder(kube, settings.scheduler_name, self.identity)
        self.events = PlaneEvents(self.recorder)
        self.plane.on_event = self.events.collect
        self.api: dict[str, dict[str, JSON]] = {kind: {} for kind in KINDS}
        self.elector = Elector(
            kube, settings.lease_namespace, LEASE_NAME, self.identity, self.clock, settings.lease_times
        )
        self.leading = threading.Event()
        self.synced = threading.Event()  # the plane was rebuilt from the API server's lists
        self.lost = threading.Event()
        self._inbox: queue.Queue[tuple[str, str, JSON]] = queue.Queue()
        self._informers: list[Informer] = []
        self._foreign: dict[str, tuple[str, dict[str, float]]] = {}  # pod key → (node, requests) of other schedulers
        self._node_used: dict[str, dict[str, float]] = {}
        self._node_seen: dict[str, tuple[Any, ...]] = {}
        self._unsynced = set(KINDS)
        self._waiting: dict[str, float] = {}  # new jobs waiting for their queue or PriorityClass → since when

    # ------------------------------------------------------------ lifecycle

    def run(self, stop: threading.Event) -> None:
        """Lead (after taking the Lease) until `stop` is set; LeaderLost if the Lease was lost."""
        try:
            if self.settings.leader_election:
                if not self.elector.acquire(stop):
                    return
                threading.Thread(target=self._renew, args=(stop,), name="lease renewal", daemon=True).start()
            self.leading.set()
            self._ensure_default_queue()
            for kind, (api, resource) in KINDS.items():
                informer = Informer(
                    self.kube,
                    resource_path(api, resource),
                    self._deliver(kind),
                    name=kind,
                    timeout_seconds=self.settings.watch_timeout,
                    read_timeout=self.settings.read_timeout,
                    on_synced=self._synced(kind),
                )
                self._informers.append(informer.start())
            self._loop(stop)
        finally:
            for informer in self._informers:
                informer.stop()
            self.recorder.close()
            self.pool.shutdown(wait=False, cancel_futures=True)
            if self.leading.is_set() and self.settings.leader_election and not self.lost.is_set():
                self.elector.release()

    def _renew(self, stop: threading.Event) -> None:
        while not stop.is_set() and not self.lost.is_set():
            stop.wait(self.settings.lease_times.retry_period)
            if stop.is_set():
                return
            if not self.elector.renew():
                log.error("lost the lease %s: stopping", LEASE_NAME)
                self.lost.set()

    def _synced(self, kind: str) -> Callable[[], None]:
        def synced() -> None:
            self._inbox.put((kind, "SYNCED", {}))

        return synced

    def _deliver(self, kind: str) -> Callable[[str, JSON], None]:
        def deliver(change: str, obj: JSON) -> None:
            self._inbox.put((kind, change, obj))

        return deliver

    def _loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            if self.lost.is_set():
                raise LeaderLost(f"{self.identity} lost the lease {self.settings.lease_namespace}/{LEASE_NAME}")
            wake = self.plane.next_wakeup()
            timeout = 1.0 if wake is None else min(1.0, max(0.0, wake - self.clock.now()))
            batch: list[tuple[str, str, JSON]] = []
            try:
                batch.append(self._inbox.get(timeout=timeout))
                while len(batch) < 20_000:
                    batch.append(self._inbox.get_nowait())
            except queue.Empty:
                pass
            for kind, change, obj in batch:
                self._safely(kind, change, obj, self._apply)
            if not self.synced.is_set():
                if self._unsynced:
                    continue
                self._rebuild()
                self.synced.set()
            if self.lost.is_set():
                continue
            try:
                self._turn()
            except Exception:
                log.exception("the control loop failed to settle or write")

    def _turn(self) -> None:
        if self._waiting:
            self._retry_waiting()
        self.plane.expire_ttls()
        for _ in range(100):
            self.plane.settle()
            self.status.flush_podgroups(self.plane)  # first: a pod never exists without its group
            if not self.pods.flush(self.plane):  # pods before statuses: binding is what waits
                break
        self.status.flush(self.plane)
        self.events.flush(self._pod_uid, self._job_uid)

    # ------------------------------------------------------------ changes from the API server

    def _apply(self, kind: str, change: str, obj: JSON) -> None:
        if change == "SYNCED":
            self._unsynced.discard(kind)
            return
        key = object_key(obj)
        store = self.api[kind]
        if change == "DELETED":
            store.pop(key, None)
        else:
            store[key] = obj
        if self.synced.is_set():
            self._handle(kind, change, obj)

    def _handle(self, kind: str, change: str, obj: JSON) -> None:
        handler: Callable[[str, JSON], None] = getattr(self, f"_on_{kind}")
        handler(change, obj)

    @staticmethod
    def _safely(kind: str, change: str, obj: JSON, fn: Callable[[str, str, JSON], None]) -> None:
        """A malformed object (or a bug its content reveals) is reported and skipped: it never ends the loop."""
        try:
            fn(kind, change, obj)
        except CalderaError as e:
            log.warning("%s %s %s: %s", kind, change, object_key(obj), e)
        except Exception:
            log.exception("%s %s %s: applying it failed", kind, change, object_key(obj))

    def _rebuild(self) -> None:
        """Everything listed: the plane as the API server holds it (a restart), before anything is written."""
        for obj in self.api["pods"].values():  # before the nodes: what they hold is off their allocatable
            self._safely("pods", "ADDED", obj, lambda _, c, obj: self._foreign_pod(c, obj))
        for kind in ("nodes", "priorityclasses", "queues"):
            for obj in self.api[kind].values():
                self._safely(kind, "ADDED", obj, self._handle)
        by_job: dict[str, list[JSON]] = {}
        for obj in self.api["pods"].values():
            job = (obj["metadata"].get("labels") or {}).get(o.JOB_NAME_KEY)
            if job:
                by_job.setdefault(f"{obj['metadata'].get('namespace')}/{job}", []).append(obj)

        def restore_job(kind: str, change: str, obj: JSON) -> None:
            self._on_jobs(change, obj, by_job.get(object_key(obj), []))

        for obj in list(self.api["jobs"].values()):
            self._safely("jobs", "ADDED", obj, restore_job)
        for obj in list(self.api["commands"].values()):
            self._safely("commands", "ADDED", obj, self._handle)
        log.info(
            "rebuilt from the API server: %d jobs, %d pods, %d nodes",
            len(self.plane.jobs),
            len(self.plane.pods),
            len(self.plane.nodes),
        )

    def _on_nodes(self, change: str, obj: JSON) -> None:
        name = obj["metadata"]["name"]
        if change == "DELETED":
            self._node_seen.pop(name, None)
            self.pods.gone_nodes.add(name)
            self.plane.node_down(name)
            return
        self.pods.gone_nodes.discard(name)
        node = node_from_api(obj, self._node_used.get(name))
        seen = (node.allocatable, node.labels, node.taints, node.unschedulable, node.ready)
        if self._node_seen.get(name) == seen:
            return  # a heartbeat: nothing the scheduler looks at changed
        self._node_seen[name] = seen
        self.plane.add_node(node)

    def _on_priorityclasses(self, change: str, obj: JSON) -> None:
        if change != "DELETED":
            self.plane.add_priority_class(priority_class_from_api(obj))

    def _on_queues(self, change: str, obj: JSON) -> None:
        if change == "DELETED":
            self.plane.remove_queue(obj["metadata"]["name"])
            return
        queue = queue_from_api(obj)
        known = self.plane.queues.get(queue.name)
        if known is not None and not (obj.get("spec") or {}).get("state"):
            # Its state is the controller's once it saw the queue (Commands change it): a status it wrote
            # before a CloseQueue must not open the queue again.
            queue = dataclasses.replace(queue, state=known.state)
        self.plane.add_queue(queue)

    def _on_podgroups(self, change: str, obj: JSON) -> None:
        pass  # caldera writes them; they are listed only to rebuild after a restart

    def _on_pods(self, change: str, obj: JSON) -> None:
        self.pods.pod_event(self.plane, change, obj)
        self._foreign_pod(change, obj)

    def _foreign_pod(self, change: str, obj: JSON) -> None:
        """Pods of other schedulers hold what they request on their node."""
        spec = obj.get("spec") or {}
        if spec.get("schedulerName") == self.settings.scheduler_name:
            return
        key = object_key(obj)
        node = spec.get("nodeName") or ""
        phase = (obj.get("status") or {}).get("phase")
        holds = change != "DELETED" and node and phase not in (o.POD_SUCCEEDED, o.POD_FAILED)
        old = self._foreign.pop(key, None)
        new = (node, pod_requests(obj)) if holds else None
        if new is not None:
            self._foreign[key] = new
        if old == new:
            return
        touched: set[str] = set()
        if old is not None:
            self._node_used[old[0]] = sub(self._node_used.get(old[0], {}), old[1])
            touched.add(old[0])
        if new is not None:
            self._node_used[new[0]] = add(self._node_used.get(new[0], {}), new[1])
            touched.add(new[0])
        for name in touched:
            if name in self.api["nodes"] and self.synced.is_set():
                self._on_nodes("MODIFIED", self.api["nodes"][name])

    def _on_commands(self, change: str, obj: JSON) -> None:
        if change == "DELETED":
            return
        target = obj.get("target") or {}  # Volcano: TargetObject *OwnerReference `json:"target"`
        ns = obj["metadata"].get("namespace", "default")
        action = str(obj.get("action", ""))
        if target.get("kind") == "Job" and action:
            self.plane.command(f"{ns}/{target.get('name', '')}", action)
        elif target.get("kind") == "Queue" and action in QUEUE_ACTIONS:
            queue = self.plane.queues.get(str(target.get("name", "")))
            if queue is not None:
                self.plane.add_queue(dataclasses.replace(queue, state=QUEUE_ACTIONS[action]))
        try:
            self.kube.delete(resource_path(*KINDS["commands"], namespace=ns, name=obj["metadata"]["name"]))
        except NotFound:
            pass
        except KubeError as e:
            log.warning("deleting command %s failed: %s", object_key(obj), e)

    def _on_jobs(self, change: str, obj: JSON, pods: list[JSON] | None = None) -> None:
        key = object_key(obj)
        uid = str(obj["metadata"].get("uid", ""))
        current = self.plane.jobs.get(key)
        if change == "DELETED":
            if current is not None and current.metadata.uid == uid:
                self.plane.delete_job(key)
                self.pods.forget_job(uid)
            self.status.forget_job(key)
            return
        if current is not None and current.metadata.uid != uid:  # deleted and made again while no watch saw it
            self.plane.delete_job(key)
            current = None
        if current is not None:
            self._job_changed(current, obj)
            return
        scheduler = (obj.get("spec") or {}).get("schedulerName") or ""
        if scheduler not in ("", self.settings.scheduler_name, VOLCANO):
            return
        state = (obj.get("status") or {}).get("state") or {}
        if state.get("reason") == REJECTED:
            return
        try:
            job = job_from_api(obj)
        except CalderaError as e:
            self._reject(obj, str(e))
            return
        previous = job_status_from_api(obj.get("status") or {})
        if previous is None and self._has_children(job, pods):
            # A predecessor made its PodGroup or pods but died before it wrote the job's status.
            now = self.clock.now()
            previous = o.JobStatus(phase=o.PENDING, min_available=job.spec.min_available, last_transition_time=now)
        if previous is None:
            self._submit(job, obj)
            return
        self._restore(job, previous, pods)

    def _submit(self, job: o.Job, obj: JSON) -> None:
        """Admit a new job, or refuse it. A queue or PriorityClass it names that this controller has not seen
        may be one whose watch event is still on its way: the job waits for it (at most GRACE seconds)."""
        key = job.key
        try:
            self.plane.submit(job)
        except ValidationError as e:
            first = self._waiting.setdefault(key, self.clock.now())
            if all(_may_be_on_its_way(err) for err in e.errors) and self.clock.now() - first < GRACE:
                return
            self._reject(obj, str(e))
        except CalderaError as e:
            self._reject(obj, str(e))
        self._waiting.pop(key, None)

    def _retry_waiting(self) -> None:
        for key in list(self._waiting):
            obj = self.api["jobs"].get(key)
            if obj is None or key in self.plane.jobs:
                self._waiting.pop(key, None)
                continue
            self._safely("jobs", "ADDED", obj, lambda _, c, obj: self._submit(job_from_api(obj), obj))

    def _has_children(self, job: o.Job, pods: list[JSON] | None) -> bool:
        if f"{job.namespace}/{podgroup_name(job)}" in self.api["podgroups"]:
            return True
        if pods is None:
            pods = list(self.api["pods"].values())
        return any(owned_by(p, job.metadata.uid) for p in pods)

    def _restore(self, job: o.Job, status: o.JobStatus, pods: list[JSON] | None) -> None:
        """A job a previous controller handled: back into the plane with its PodGroup and pods."""
        with_elastic_defaults(job)  # as `submit` does: the predecessor ran the job with them
        job.status = status
        group = self.api["podgroups"].get(f"{job.namespace}/{podgroup_name(job)}")
        if group is not None:
            self.status.adopt_podgroup(group)
        pg = restored_podgroup(job, self.api["podgroups"])
        if pods is None:
            pods = [
                p
                for p in self.api["pods"].values()
                if p["metadata"].get("namespace") == job.namespace
                and (p["metadata"].get("labels") or {}).get(o.JOB_NAME_KEY) == job.name
            ]
        found = restored_pods(job, pods, self.plane.state)
        for _, body in found:
            self.pods.adopt(body)
        self.plane.restore(job, pg, [(pod, 0) for pod, _ in found])
        self.status.adopt_job_status(job)

    def _job_changed(self, job: o.Job, obj: JSON) -> None:
        """A spec change of a running job: elastic tasks scale; other changes are not applied (as in Volcano)."""
        generation = int(obj["metadata"].get("generation") or 1)
        if generation == job.metadata.generation:
            return
        job.metadata.generation = generation
        try:
            wanted = job_from_api(obj)
        except CalderaError as e:
            self._warn(job, "InvalidUpdate", str(e))
            return
        for task in wanted.spec.tasks:
            have = job.spec.task(task.name)
            if have is not None and have.replicas != task.replicas:
                try:
                    self.plane.scale(job.key, task.name, task.replicas)
                except CalderaError as e:
                    self._warn(job, "InvalidUpdate", str(e))

    def _reject(self, obj: JSON, message: str) -> None:
        key = object_key(obj)
        now = self.clock.now()
        status = {
            "state": {"phase": o.FAILED, "reason": REJECTED, "message": message, "lastTransitionTime": to_time(now)},
            "conditions": [{"status": o.FAILED, "lastTransitionTime": to_time(now)}],
        }
        self.status.write_rejection(key, status)
        ref = ObjectRef(
            o.JOB_API,
            "Job",
            obj["metadata"].get("namespace", "default"),
            obj["metadata"]["name"],
            str(obj["metadata"].get("uid", "")),
        )
        self.recorder.record(ref, REJECTED, message, now, warning=True)
        log.info("job %s rejected: %s", key, message)

    def _ensure_default_queue(self) -> None:
        path = resource_path(*KINDS["queues"])
        try:
            self.kube.get(f"{path}/default")
        except NotFound:
            body = {
                "apiVersion": o.SCHEDULING_API,
                "kind": "Queue",
                "metadata": {"name": "default"},
                "spec": {"weight": 1, "reclaimable": True},
            }
            try:
                self.kube.create(path, body)
            except KubeError as e:
                log.warning("creating the default queue failed: %s", e)

    # ------------------------------------------------------------ events

    def _job_object(self, key: str) -> JSON | None:
        return self.api["jobs"].get(key)

    def _pod_uid(self, key: str) -> str:
        api = self.pods.api.get(key)
        return api.uid if api is not None else ""

    def _job_uid(self, key: str) -> str:
        job = self.plane.jobs.get(key)
        return job.metadata.uid if job is not None else ""

    def _warn(self, job: o.Job, reason: str, message: str) -> None:
        ref = ObjectRef(o.JOB_API, "Job", job.namespace, job.name, job.metadata.uid)
        self.recorder.record(ref, reason, message, self.clock.now(), warning=True)
