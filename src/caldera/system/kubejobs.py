"""What the Job watch tells the control plane: a new Job admitted or refused, a known one changed or deleted,
one a predecessor handled restored.

A new Job gets Volcano's webhook defaults in memory and the same admission checks as on the embedded cluster
(`plane.submit`); one the controller refuses gets status Failed with reason Rejected and a Warning event, and
never starts. A queue or PriorityClass it names that was not seen yet may be on its way (the watches of
different kinds are not ordered): the job waits for it up to `GRACE` seconds. Jobs naming another scheduler
are left alone. A spec change of a running job scales its elastic tasks; other changes are not applied (as
in Volcano). A Job with a status (or a PodGroup or pods) a predecessor wrote is restored (`kuberestore`).

New jobs are admitted in bounded batches (`admit`, in the order they came): with thousands of new jobs at
once (a start, a burst) the first are placed and their pods written while the rest wait their turn, instead
of all of them being placed before anything is written. A batch is `BATCH_PODS` pods: a burst takes few
turns (each turn waits for its pod writes, and costs a scheduling cycle over every node). Batches that
started small and doubled (32 pods first) wrote the first pods sooner, but halved single-pod throughput
on 100 KWOK nodes, quiet (73–91 against 147 pods/s, the API server's CPU 15–18 s against 7.4:
docs/benchmarks.md), so they were taken out.

Invariant: called on the controller's loop thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from caldera.backends.kube.client import JSON
from caldera.backends.kube.convert import job_from_api, job_status_from_api, to_time
from caldera.backends.kube.informer import object_key
from caldera.backends.kube.recorder import EventRecorder, ObjectRef
from caldera.core import objects as o
from caldera.core.errors import CalderaError, FieldError, ValidationError
from caldera.system.control import ControlPlane
from caldera.system.kubepods import KubePods
from caldera.system.kuberestore import has_children, job_pods, restore_job
from caldera.system.kubestatus import StatusWriter
from caldera.utils.clock import Clock

log = logging.getLogger("caldera.kube")
REJECTED = "Rejected"
GRACE = 3.0  # seconds a new job waits for a queue or PriorityClass it names to be seen
VOLCANO = "volcano"  # Jobs naming Volcano's scheduler are caldera's too: it replaces Volcano
BATCH_PODS = 1024  # pods of the new jobs admitted in one turn (at least one job)


def safely(kind: str, change: str, obj: JSON, fn: Callable[[str, str, JSON], None]) -> None:
    """A malformed object (or a bug its content reveals) is reported and skipped: it never ends the loop."""
    try:
        fn(kind, change, obj)
    except CalderaError as e:
        log.warning("%s %s %s: %s", kind, change, object_key(obj), e)
    except Exception:
        log.exception("%s %s %s: applying it failed", kind, change, object_key(obj))


def _may_be_on_its_way(error: FieldError) -> bool:
    """A rule broken only because an object the job names was not seen yet (its watch event may be late)."""
    return (error.path == "spec.queue" and "does not exist" in error.rule) or (
        error.path.endswith("priorityClassName") and "no PriorityClass" in error.rule
    )


def _replicas(obj: JSON) -> int:
    """The pods a Job asks for (at least 1), as far as its unchecked manifest says."""
    try:
        return max(1, sum(int(t.get("replicas") or 0) for t in obj["spec"]["tasks"]))
    except (KeyError, TypeError, ValueError, AttributeError):
        return 1


class JobWatch:
    def __init__(
        self,
        plane: ControlPlane,
        pods: KubePods,
        status: StatusWriter,
        recorder: EventRecorder,
        api: dict[str, dict[str, JSON]],
        scheduler_name: str,
        clock: Clock,
    ) -> None:
        self.plane = plane
        self.pods = pods
        self.status = status
        self.recorder = recorder
        self.api = api  # kind → key → the object as the API server has it (the controller's caches)
        self.scheduler_name = scheduler_name
        self.clock = clock
        self.waiting: dict[str, float] = {}  # new jobs waiting for their queue or PriorityClass → since when
        self.new: dict[str, JSON] = {}  # new Jobs not admitted yet, in the order they came

    def on_jobs(self, change: str, obj: JSON, pods: list[JSON] | None = None) -> None:
        """`pods`: the job's pods when the caller has them at hand (a rebuild), else they are looked up."""
        key = object_key(obj)
        uid = str(obj["metadata"].get("uid", ""))
        current = self.plane.jobs.get(key)
        if change == "DELETED":
            self.new.pop(key, None)
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
        if scheduler not in ("", self.scheduler_name, VOLCANO):
            return
        state = (obj.get("status") or {}).get("state") or {}
        if state.get("reason") == REJECTED:
            return
        previous = job_status_from_api(obj.get("status") or {})
        groups = self.api["podgroups"]
        # Without the pods at hand (a watch event), the PodGroup tells: a controller makes it before any pod.
        if previous is None and not has_children(obj, groups, pods or ()):
            self.new[key] = obj  # parsed and admitted in its turn (`admit`)
            return
        try:
            job = job_from_api(obj)
        except CalderaError as e:
            self.reject(obj, str(e))
            return
        if previous is None:
            # A predecessor made its PodGroup or pods but died before it wrote the job's status.
            now = self.clock.now()
            previous = o.JobStatus(phase=o.PENDING, min_available=job.spec.min_available, last_transition_time=now)
        if pods is None:
            pods = job_pods(job, self.api["pods"].values())
        restore_job(self.plane, self.pods, self.status, groups, job, previous, pods)

    def admit(self, pods: int | None = None) -> None:
        """Submit new jobs, in the order they came, until about `pods` pods were admitted (default BATCH_PODS;
        a job is admitted whole, whatever its size)."""
        limit = BATCH_PODS if pods is None else pods
        admitted = 0
        while self.new and admitted < limit:
            obj = self.new.pop(next(iter(self.new)))
            admitted += _replicas(obj)
            safely("jobs", "ADDED", obj, self._admit)

    def _admit(self, kind: str, change: str, obj: JSON) -> None:
        try:
            job = job_from_api(obj)
        except CalderaError as e:
            self.reject(obj, str(e))
            return
        self.submit(job, obj)

    def submit(self, job: o.Job, obj: JSON) -> None:
        """Admit a new job, or refuse it. A queue or PriorityClass it names that this controller has not seen
        may be one whose watch event is still on its way: the job waits for it (at most GRACE seconds)."""
        key = job.key
        try:
            self.plane.submit(job)
        except ValidationError as e:
            first = self.waiting.setdefault(key, self.clock.now())
            if all(_may_be_on_its_way(err) for err in e.errors) and self.clock.now() - first < GRACE:
                return
            self.reject(obj, str(e))
        except CalderaError as e:
            self.reject(obj, str(e))
        self.waiting.pop(key, None)

    def retry_waiting(self) -> None:
        for key in list(self.waiting):
            obj = self.api["jobs"].get(key)
            if obj is None or key in self.plane.jobs:
                self.waiting.pop(key, None)
                continue
            safely("jobs", "ADDED", obj, lambda _, c, obj: self.submit(job_from_api(obj), obj))

    def _job_changed(self, job: o.Job, obj: JSON) -> None:
        """A spec change of a running job: elastic tasks scale; other changes are not applied (as in Volcano)."""
        generation = int(obj["metadata"].get("generation") or 1)
        if generation == job.metadata.generation:
            return
        job.metadata.generation = generation
        try:
            wanted = job_from_api(obj)
        except CalderaError as e:
            self.warn(job, "InvalidUpdate", str(e))
            return
        for task in wanted.spec.tasks:
            have = job.spec.task(task.name)
            if have is not None and have.replicas != task.replicas:
                try:
                    self.plane.scale(job.key, task.name, task.replicas)
                except CalderaError as e:
                    self.warn(job, "InvalidUpdate", str(e))
                    continue
                self.pods.job_scaled(job.key)

    def reject(self, obj: JSON, message: str) -> None:
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

    def warn(self, job: o.Job, reason: str, message: str) -> None:
        ref = ObjectRef(o.JOB_API, "Job", job.namespace, job.name, job.metadata.uid)
        self.recorder.record(ref, reason, message, self.clock.now(), warning=True)
