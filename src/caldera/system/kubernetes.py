"""Kubernetes mode: the control plane fed by watch caches of the API server, writing back what it decided.

    watch caches (Informer per kind) → inbox → one loop thread: the control plane (controller +
    scheduler, the same code as the embedded cluster and the simulator) → pods (KubePods:
    create bound, bind, delete), status (StatusWriter: Jobs, PodGroups, Queues), Events

One replica acts: `run()` first takes the Lease (`backends.kube.lease`, unless told not to), then
lists every kind and rebuilds the plane from what the API server holds (jobs with their status,
podgroups, pods: `kuberestore`), then applies changes as the watches bring them. A replica that
loses its Lease stops acting at once (`LeaderLost`); a standby takes over and rebuilds the same way.

What each kind's watch means to the plane: Jobs in `kubejobs` (admitted with Volcano's webhook defaults,
refused with a Rejected status and event, scaled, restored); Nodes, PriorityClasses, Queues, Commands and
the pods of other schedulers in `kubewatch`; pods this controller wrote in `kubepods`; the pods and PodGroups
of other operators that name caldera's schedulerName in `kubegroups`.

Invariants: only the loop thread touches the plane; nothing is written before the first full list
of every kind was applied (so a restarted controller never re-creates or re-binds what exists);
a malformed object is reported and skipped, never ends the loop.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from caldera.backends.kube.client import JSON, KubeClient, KubeError, NotFound, resource_path
from caldera.backends.kube.foreign import JOB_PREFIX, OPERATOR_PODGROUPS
from caldera.backends.kube.informer import Informer, object_key
from caldera.backends.kube.lease import Elector, LeaseTimes
from caldera.backends.kube.recorder import EventRecorder
from caldera.core import objects as o
from caldera.core.errors import CalderaError
from caldera.scheduler.config import SchedulerConfig
from caldera.scheduler.scheduler import Scheduler
from caldera.system.control import ControlPlane
from caldera.system.kubeevents import PlaneEvents
from caldera.system.kubegroups import OperatorGroups
from caldera.system.kubejobs import JobWatch, safely
from caldera.system.kubepods import KubePods
from caldera.system.kubestatus import StatusWriter
from caldera.system.kubewatch import ClusterWatch
from caldera.utils.clock import Clock, SystemClock

log = logging.getLogger("caldera.kube")
KINDS: dict[str, tuple[str, str]] = {
    "nodes": ("v1", "nodes"),
    "priorityclasses": ("scheduling.k8s.io/v1", "priorityclasses"),
    "queues": (o.SCHEDULING_API, "queues"),
    "podgroups": (o.SCHEDULING_API, "podgroups"),
    "operator-podgroups": (o.SCHEDULING_API, "podgroups"),  # other operators' (SELECTORS), watched
    "jobs": (o.JOB_API, "jobs"),
    "commands": ("bus.volcano.sh/v1alpha1", "commands"),
    "pods": ("v1", "pods"),
}
LEASE_NAME = "caldera-controller"
# Kinds read once, at start (to rebuild): afterwards the leader is their only writer, and watching its own
# writes come back would only cost parsing (a PodGroup's ADDED and MODIFIED events for every job).
LISTED_ONLY = frozenset({"podgroups"})
SELECTORS = {"operator-podgroups": OPERATOR_PODGROUPS}  # label selectors: the PodGroups caldera made for Jobs left out
API_REQUESTS = "API requests sent:"
STARTED = "started"  # logged by `caldera controller` once its modules are imported
LISTED = "listed"  # logged as each kind's first list is in: "listed jobs: 1000" (benchmarks/kube_startup.py)
FIRST_WRITES = "first pods written"  # logged once, when the first turn's pods were sent  # logged at the end, with a JSON map of "VERB resource" → count


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
    workers: int = 32  # concurrent requests when writing pods and PodGroups
    status_workers: int = 6  # concurrent status writes (Jobs, PodGroups, Queues), not waited for
    watch_timeout: int = 300  # seconds a watch lasts before it is opened again
    read_timeout: float = 90.0  # a watch silent this long (no event, no bookmark) is dead
    scheduler: SchedulerConfig | None = None  # the scheduler's policy (None: the built-in default)


class KubeController:
    def __init__(self, kube: KubeClient, settings: Settings = Settings(), clock: Clock | None = None) -> None:
        self.kube = kube
        self.settings = settings
        self.clock = clock or SystemClock()
        self.identity = settings.identity or f"{socket.gethostname()}-{os.getpid()}"
        self.pool = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="caldera-write")
        self.pods = KubePods(kube, self.pool, settings.scheduler_name, self._job_object, self._warn, self.clock.now)
        self.pods.elastic_server = settings.elastic_server
        self.plane = ControlPlane(Scheduler(settings.scheduler), self.pods, self.clock)
        self.status_pool = ThreadPoolExecutor(max_workers=settings.status_workers, thread_name_prefix="caldera-status")
        self.group_pool = ThreadPoolExecutor(max_workers=settings.workers // 2, thread_name_prefix="caldera-groups")
        self.status = StatusWriter(kube, self.group_pool, self.status_pool, self.clock.now)
        self._turned = False  # a first turn was taken (logged once: its time is the start-up's end)
        self._writing = False  # the loop thread is placing and writing pods (a turn's settle-and-flush)
        # Events are paced while pods and statuses are being written: the API server binds first, tells after.
        self.recorder = EventRecorder(kube, settings.scheduler_name, self.identity, busy=self._busy)
        self.events = PlaneEvents(self.recorder)
        self.plane.on_event = self.events.collect
        self.api: dict[str, dict[str, JSON]] = {kind: {} for kind in KINDS}
        self.jobs = JobWatch(
            self.plane, self.pods, self.status, self.recorder, self.api, settings.scheduler_name, self.clock
        )
        self.elector = Elector(
            kube, settings.lease_namespace, LEASE_NAME, self.identity, self.clock, settings.lease_times
        )
        self.leading = threading.Event()
        self.synced = threading.Event()  # the plane was rebuilt from the API server's lists
        self.lost = threading.Event()
        self._inbox: queue.Queue[tuple[str, str, JSON]] = queue.Queue()
        self._informers: list[Informer] = []
        self.cluster = ClusterWatch(kube, self.plane, self.pods, self.api["nodes"], settings.scheduler_name)
        self.groups = OperatorGroups(self.plane, self.pods, self.status, settings.scheduler_name, self.cluster.hold)
        self._unsynced = set(KINDS)
        self._handlers: dict[str, Callable[[str, JSON], None]] = {
            "nodes": self.cluster.on_nodes,
            "priorityclasses": self.cluster.on_priorityclasses,
            "queues": self.cluster.on_queues,
            "podgroups": lambda change, obj: None,  # caldera writes them; listed (not watched) to rebuild
            "operator-podgroups": self.groups.on_podgroups,
            "jobs": self.jobs.on_jobs,
            "commands": self.cluster.on_commands,
            "pods": self._on_pods,
        }

    # ------------------------------------------------------------ lifecycle

    def run(self, stop: threading.Event) -> None:
        """Lead (after taking the Lease) until `stop` is set; LeaderLost if the Lease was lost."""
        try:
            if self.settings.leader_election:
                if not self.elector.acquire(stop):
                    return
                threading.Thread(target=self._renew, args=(stop,), name="lease renewal", daemon=True).start()
            self.leading.set()
            log.info("leading")
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
                    watch=kind not in LISTED_ONLY,
                    label_selector=SELECTORS.get(kind),
                )
                self._informers.append(informer.start())
            self._loop(stop)
        finally:
            for informer in self._informers:
                informer.stop()
            self.recorder.close()
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.status_pool.shutdown(wait=False, cancel_futures=True)
            self.group_pool.shutdown(wait=False, cancel_futures=True)
            if self.leading.is_set() and self.settings.leader_election and not self.lost.is_set():
                self.elector.release()
            log.info("%s %s", API_REQUESTS, json.dumps(dict(sorted(self.kube.requests.items()))))

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
            if self.jobs.new:
                timeout = 0.0  # new jobs wait for their batch: take what came, then admit the next
            elif self.status.writing:
                timeout = min(timeout, 0.05)  # take the results of the status writes soon
            batch: list[tuple[str, str, JSON]] = []
            try:
                batch.append(self._inbox.get(timeout=timeout))
                while len(batch) < 20_000:
                    batch.append(self._inbox.get_nowait())
            except queue.Empty:
                pass
            for kind, change, obj in batch:
                safely(kind, change, obj, self._apply)
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
        if self.jobs.waiting:
            self.jobs.retry_waiting()
        self.jobs.admit()
        self.plane.expire_ttls()
        self._writing = True
        try:
            self._settle_and_write()
        finally:
            self._writing = False
        if not self._turned:
            self._turned = True
            log.info(
                "%s: %d jobs in the plane, %d still to admit", FIRST_WRITES, len(self.plane.jobs), len(self.jobs.new)
            )
        self.events.flush(self._pod_uid, self._job_uid)

    def _busy(self) -> bool:
        """Whether writes that matter more than events are under way (read by the event recorder's thread)."""
        return self._writing or bool(self.jobs.new) or self.status.writing > 0

    def _settle_and_write(self) -> None:
        for _ in range(100):
            self.plane.settle()
            self._hand_touched()
            gates = self.status.flush_podgroups(self.plane)  # a pod never exists without its group
            told = self.pods.flush(self.plane, gates)  # each job's pods once its group exists; before statuses
            self.status.podgroups_created()
            if not told:
                break
        self._hand_touched()
        self.status.flush(self.plane)

    def _hand_touched(self) -> None:
        """The jobs the plane changed since the last call: the writers look only at those."""
        touched = self.plane.take_touched()
        if touched:
            self.status.touched(touched)
            self.pods.touched(touched)

    # ------------------------------------------------------------ changes from the API server

    def _apply(self, kind: str, change: str, obj: JSON) -> None:
        if change == "SYNCED":
            self._unsynced.discard(kind)
            log.info("%s %s: %d", LISTED, kind, len(self.api[kind]))
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
        self._handlers[kind](change, obj)

    def _on_pods(self, change: str, obj: JSON) -> None:
        self.pods.pod_event(self.plane, change, obj)
        self.cluster.foreign_pod(change, obj)
        self.groups.on_pod(change, obj)

    def _rebuild(self) -> None:
        """Everything listed: the plane as the API server holds it (a restart), before anything is written."""
        for obj in self.api["pods"].values():  # before the nodes: what they hold is off their allocatable
            safely("pods", "ADDED", obj, lambda _, c, obj: self.cluster.foreign_pod(c, obj))
        for kind in ("nodes", "priorityclasses", "queues"):
            for obj in self.api[kind].values():
                safely(kind, "ADDED", obj, self._handle)
        by_job: dict[str, list[JSON]] = {}
        for obj in self.api["pods"].values():
            job = (obj["metadata"].get("labels") or {}).get(o.JOB_NAME_KEY)
            if job:
                by_job.setdefault(f"{obj['metadata'].get('namespace')}/{job}", []).append(obj)

        def restore_job(kind: str, change: str, obj: JSON) -> None:
            self.jobs.on_jobs(change, obj, by_job.get(object_key(obj), []))

        for obj in list(self.api["jobs"].values()):
            safely("jobs", "ADDED", obj, restore_job)
        for obj in list(self.api["operator-podgroups"].values()):
            safely("operator-podgroups", "ADDED", obj, self._handle)
        for obj in list(self.api["pods"].values()):
            safely("pods", "ADDED", obj, lambda _, c, obj: self.groups.on_pod(c, obj))
        for obj in list(self.api["commands"].values()):
            safely("commands", "ADDED", obj, self._handle)
        log.info(
            "rebuilt from the API server: %d jobs (and %d new ones to admit), %d pods, %d nodes",
            len(self.plane.jobs),
            len(self.jobs.new),
            len(self.plane.pods),
            len(self.plane.nodes),
        )

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
        if JOB_PREFIX in key:  # another operator's group: its events are about its PodGroup
            pg = self.plane.podgroups.get(key)
            return pg.metadata.uid if pg is not None else ""
        job = self.plane.jobs.get(key)
        return job.metadata.uid if job is not None else ""

    def _warn(self, job: o.Job, reason: str, message: str) -> None:
        self.jobs.warn(job, reason, message)
