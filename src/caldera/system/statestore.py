"""The embedded cluster's state in its store: read back at start, written after each turn of the loop.

A turn writes only what changed. The control plane names the jobs it touched (their job,
podgroup or pods changed, or went: `ControlPlane.take_touched`); for each of those, the
objects it has now are serialised and compared with what was last written for it, and only
the differences are put or deleted. Queues and priority classes (a few) are compared every
turn, the nodes' summaries when a node changed or what is allocated on one did (the scheduler's
node change log moved: a summary is a pass over every pod). So a turn costs what it changed, not
what the store holds (at 10,000 pods a full pass took 1 to 2 s).

Invariants: after a successful `write`, the store holds exactly the objects the plane has,
as the old full pass would have written them (`CALDERA_VERIFY_STORE=1` checks this after every
write, which the test suite turns on); a failed write (disk full, read-only) changes nothing
in the store and forgets nothing: the next write tries again with everything still unwritten.
"""

from __future__ import annotations

import json
import logging
import os

from caldera.backends.sqlite_store import SqliteStore
from caldera.core import objects as o
from caldera.core.manifest import parse_priority_class, parse_queue
from caldera.system import persist
from caldera.system.api import JSON
from caldera.system.control import ControlPlane
from caldera.system.ended import EndedPod, EndedPods
from caldera.system.runtime import LocalRuntime
from caldera.system.views import holding_pods, node_summaries
from caldera.system.watch import node_object

log = logging.getLogger("caldera.daemon")
Ident = tuple[str, str, str]  # kind, namespace, name
VERIFY = "CALDERA_VERIFY_STORE"


class PlaneStore:
    """What the plane decided, in the store; only the loop's thread calls `write`."""

    EVENTS_IN_MEMORY = 1000  # written events kept in memory too; the store has them all (describe reads it)

    def __init__(self, store: SqliteStore, plane: ControlPlane, runtime: LocalRuntime, ended: EndedPods) -> None:
        self.store = store
        self.plane = plane
        self.runtime = runtime
        self.ended = ended
        self.events_saved = 0  # how many of the plane's events are in the store
        self.nodes_changed = True  # a node's labels or taints changed: its summary is written again
        self.verify = os.environ.get(VERIFY) == "1"
        self.mismatches: list[str] = []  # what verification found (empty unless a change was missed)
        self._jobs: dict[str, dict[Ident, str]] = {}  # job key → what was last written of it
        self._globals: dict[Ident, str] = {}  # queues, priority classes, nodes as last written
        self._unwritten: set[str] = set()  # touched jobs a failed write left
        self._nodes_seen: tuple[int, int] | None = None  # the scheduler's node change marker at the last write

    # ------------------------------------------------------------ writing

    def pending(self) -> bool:
        """Whether a write is owed: events not written yet, or a failed write to retry."""
        return bool(self._unwritten) or self.events_saved < len(self.plane.events)

    def write(self) -> bool:
        """Write what changed since the last write, in one transaction; whether anything was written."""
        plane = self.plane
        touched = plane.take_touched() | self._unwritten
        self._unwritten = touched  # until the commit: a failure leaves them to the next write
        self.ended.forget_gone_jobs(plane.jobs)
        jobs = {key: self._job_objects(key) for key in touched}
        # What is allocated on a node moves the scheduler's change log (binds, ends, removals), a node's
        # labels, taints or capacity its node version or `nodes_changed`: otherwise the summaries stand.
        nodes_seen = (plane.state.change_position, plane.state.node_version)
        globals_ = self._global_objects(nodes=self.nodes_changed or nodes_seen != self._nodes_seen)
        if "Node" not in {kind for kind, _, _ in globals_}:  # not computed this time: as they were
            globals_.update({i: text for i, text in self._globals.items() if i[0] == "Node"})
        events = plane.events[self.events_saved :]
        puts: list[tuple[Ident, str]] = []
        deletes: list[Ident] = []
        for key, want in jobs.items():
            _diff(self._jobs.get(key, {}), want, puts, deletes)
        _diff(self._globals, globals_, puts, deletes)
        if puts or deletes or events:
            with self.store.transaction():
                # The deletes first: a pod whose name moved to another job keeps its record.
                self.store.write([(*ident, text) for ident, text in puts], deletes)
                self.store.add_events(
                    [(e.time, e.namespace, e.kind, e.object, e.node, e.reason, e.message) for e in events]
                )
        for key, want in jobs.items():
            if want:
                self._jobs[key] = want
            else:
                self._jobs.pop(key, None)
        self._globals = globals_
        self._unwritten = set()
        self.nodes_changed = False
        self._nodes_seen = nodes_seen
        self.events_saved += len(events)
        drop = max(0, self.events_saved - self.EVENTS_IN_MEMORY)  # only written ones, the oldest first
        del plane.events[:drop]
        self.events_saved -= drop
        if self.verify:
            self._check()
        return bool(puts or deletes or events)

    def _job_objects(self, key: str) -> dict[Ident, str]:
        """The stored form of a job, its podgroup and its pods (those that ended and were kept too)."""
        job = self.plane.jobs.get(key)
        if job is None:  # deleted: its pods still stopping, kept until they are gone (a restart counts them)
            return {
                ("Pod", pod.namespace, pod.name): _text(
                    persist.pod_record(pod, self.runtime.attempts.get(pod.key, 0), {}, self.runtime.gpus.held(pod.key))
                )
                for pod in self.plane.job_pods.get(key, {}).values()
            }
        want: dict[Ident, str] = {("Job", job.namespace, job.name): _text(persist.job_record(job))}
        ports: dict[str, dict[str, int]] = {}  # pod key → its container ports' host ports
        for (pod_name, port), host in self.runtime.ports.for_job(job).items():
            ports.setdefault(f"{job.namespace}/{pod_name}", {})[str(port)] = host
        pg = self.plane.podgroups.get(key)
        if pg is not None:
            want[("PodGroup", pg.metadata.namespace, pg.metadata.name)] = _text(persist.podgroup_record(pg))
        for gone in self.ended.of_key(key):  # a live pod of the same name, written next, takes the entry over
            body = persist.pod_record(gone.pod, gone.attempt, ports.get(gone.pod.key, {}), [], ended_uid=gone.job_uid)
            want[("Pod", gone.pod.namespace, gone.pod.name)] = _text(body)
        for pod in self.plane.job_pods.get(key, {}).values():
            held = self.runtime.gpus.held(pod.key)
            body = persist.pod_record(pod, self.runtime.attempts.get(pod.key, 0), ports.get(pod.key, {}), held)
            want[("Pod", pod.namespace, pod.name)] = _text(body)
        return want

    def _global_objects(self, nodes: bool, every_pod: bool = False) -> dict[Ident, str]:
        want: dict[Ident, str] = {}
        for q in self.plane.queues.values():
            want[("Queue", "", q.name)] = _text(q.to_dict())
        for pc in self.plane.priority_classes.values():
            want[("PriorityClass", "", pc.name)] = _text(pc.to_dict())
        if nodes:
            pods = None if every_pod else holding_pods(self.plane)  # not a pass over every finished pod
            for summary in node_summaries(self.plane, pods):  # for watchers: what is allocated changes
                want[("Node", "", summary["name"])] = _text(node_object(summary))
        return want

    def _check(self) -> None:
        """Compare what was written with a full pass over the plane (the test suite's guard on `touched`)."""
        full = self._global_objects(nodes=True, every_pod=True)
        for key in self.plane.jobs.keys() | self.plane.job_pods.keys():
            full.update(self._job_objects(key))
        written = dict(self._globals)
        for objects in self._jobs.values():
            written.update(objects)
        for ident in sorted(full.keys() | written.keys()):
            if full.get(ident) != written.get(ident):
                message = f"{'/'.join(ident)}: the store has {written.get(ident)} but the plane {full.get(ident)}"
                log.error("store out of step with the plane: %s", message)
                self.mismatches.append(message)

    # ------------------------------------------------------------ reading back

    def restore(self) -> None:
        """Put the stored queues, priority classes, jobs, podgroups and pods back into the plane."""
        plane, runtime = self.plane, self.runtime
        for s in self.store.list("Queue"):
            plane.add_queue(parse_queue(s.body, "stored queue"))
        for s in self.store.list("PriorityClass"):  # before the pods, whose priorities they give
            plane.add_priority_class(parse_priority_class(s.body, "stored priority class"))
        groups = {(s.namespace, s.body["spec"].get("job", "")): s.body for s in self.store.list("PodGroup")}
        pods: dict[tuple[str, str], list[JSON]] = {}
        for s in self.store.list("Pod"):
            pods.setdefault((s.namespace, s.body["spec"].get("job", "")), []).append(s.body)
        jobs: set[tuple[str, str]] = set()
        for s in self.store.list("Job"):
            job = persist.job_from_record(s.body)
            jobs.add((job.namespace, job.name))
            ident = (job.namespace, job.name)
            pg_body = groups.get(ident)
            pg = persist.podgroup_from_record(pg_body, job) if pg_body else None
            restored: list[tuple[o.Pod, int]] = []
            for body in pods.get(ident, []):
                task = job.spec.task(body["spec"].get("task", ""))
                cls = (task.template.spec.priority_class_name if task else "") or job.spec.priority_class_name
                found = persist.pod_from_record(body, job, plane.state.priority_of(cls))
                if found is None:
                    continue
                pod, attempt, gpus = found
                runtime.attempts[pod.key] = attempt
                ports = body.get("caldera", {}).get("ports", {})
                runtime.ports.restore(job.key, {(pod.name, int(p)): int(h) for p, h in ports.items()})
                ended_uid = persist.ended_uid(body)
                if ended_uid is not None:  # kept for people: not the plane's
                    self.ended.restore(EndedPod(pod, ended_uid, attempt))
                    continue
                restored.append((pod, attempt))
                if gpus and pod.node_name:
                    runtime.gpus.restore(pod.key, pod.node_name, gpus)
            plane.restore(job, pg, restored)
            self._jobs[job.key] = written = {("Job", job.namespace, job.name): _unstamped("Job", s.body)}
            if pg_body is not None:
                written[("PodGroup", job.namespace, pg_body["metadata"]["name"])] = _unstamped("PodGroup", pg_body)
            for body in pods.get(ident, []):
                written[("Pod", job.namespace, body["metadata"]["name"])] = _unstamped("Pod", body)
        self._restore_stopping({ident for ident in pods if ident not in jobs}, pods)
        for kind in ("Queue", "PriorityClass", "Node"):
            self._globals.update({(kind, "", s.name): _unstamped(kind, s.body) for s in self.store.list(kind)})

    def _restore_stopping(self, deleted: set[tuple[str, str]], pods: dict[tuple[str, str], list[JSON]]) -> None:
        """The pods of deleted jobs that were stopping on nodes, back into the plane until they are gone
        (the others of their records are dropped with the jobs' other leftovers: `JobExtras.forget_orphans`)."""
        for namespace, name in sorted(deleted):
            restored, written = [], {}
            for body in pods[(namespace, name)]:
                found = persist.stopping_pod_from_record(body)
                if found is None:
                    continue
                pod, attempt, gpus = found
                if pod.node_name not in self.plane.nodes:  # a node no more: nothing of it to hold
                    continue
                restored.append((pod, attempt))
                self.runtime.attempts[pod.key] = attempt
                if gpus:
                    self.runtime.gpus.restore(pod.key, pod.node_name, gpus)
                written[("Pod", namespace, pod.name)] = _unstamped("Pod", body)
            if restored:
                self.plane.restore_stopping(f"{namespace}/{name}", restored)
                self._jobs[f"{namespace}/{name}"] = written


def _text(body: JSON) -> str:
    return json.dumps(body, sort_keys=True)


def _diff(old: dict[Ident, str], want: dict[Ident, str], puts: list[tuple[Ident, str]], deletes: list[Ident]) -> None:
    """Add to `puts` what `want` has new or changed, to `deletes` what `old` had and `want` has not."""
    puts.extend((ident, text) for ident, text in want.items() if old.get(ident) != text)
    deletes.extend(ident for ident in old if ident not in want)


def _unstamped(kind: str, body: JSON) -> str:
    """A stored body as `write` serialised it: the store stamped its resourceVersion over the plane's "0"
    (a node's summary has none)."""
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k != "resourceVersion"}
    if kind != "Node":
        meta["resourceVersion"] = "0"
    return _text({**body, "metadata": meta})
