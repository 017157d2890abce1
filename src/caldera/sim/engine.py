"""The simulation: the real control plane (controller + scheduler) on the fake executor and a virtual clock.

Everything that happens is an entry in one time-ordered heap: job arrivals,
faults, user commands, pod endings and the control plane's timers. At each
instant all entries due are applied, then the control plane settles (reconciles
and schedules until nothing changes); then the clock jumps to the next entry.
Ties are broken by insertion order, so the same inputs give the same run, byte
for byte.

Pods train as gangs (`progress.py`): a job's pods make progress only while
minAvailable of them run, a preempted job resumes from its last checkpoint
(annotation `caldera.dev/checkpoint-interval`, seconds or a Go duration; 0:
nothing is lost) or from zero, and its pods end when its work is done. An
elastic job with a speed-up model (annotations of `speedup.py`) trains at the
rate of its running workers. The
scheduler is told each job's remaining time (`state.remaining`), which only
the srtf oracle uses. `work_report(job)` says what each job lost.

The run ends when the heap is empty or at `until`. Without `until` it also ends
once nothing can happen any more but pods restarting in place for ever
(`restartPolicy: Always`, which Kubernetes gives a pod that names none): no
arrival, fault, command or timer is left, and every pod still due to end will be
restarted and has already used its task's restarts (so TaskFailed, the one event
a restart can still raise, has already been acted on). A `SimulationStopped`
event says so.
"""

from __future__ import annotations

import gc
import heapq
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import count

from caldera.backends.fake import FakeExecutor
from caldera.controller import task_restart_limit
from caldera.core import objects as o
from caldera.core.duration import parse_duration
from caldera.core.elastic import is_elastic
from caldera.core.errors import ValidationError
from caldera.core.resources import GPU
from caldera.scheduler.scheduler import Scheduler
from caldera.scheduler.state import JobInfo
from caldera.sim import speedup
from caldera.sim.costs import FREE, Costs
from caldera.sim.inputs import Cluster, Command, Fault, JobArrival, Workload
from caldera.sim.progress import Progress, WorkReport
from caldera.system.control import ControlPlane
from caldera.utils.clock import ManualClock

CHECKPOINT_INTERVAL = "caldera.dev/checkpoint-interval"
PREEMPTION_KINDS = frozenset({"Preempt", "Reclaim"})


@dataclass(slots=True)
class Simulation:
    cluster: Cluster
    workload: Workload
    scheduler: Scheduler = field(default_factory=Scheduler)
    until: float | None = None
    clock: ManualClock = field(default_factory=ManualClock)
    plane: ControlPlane = field(init=False)
    rejected: list[tuple[JobArrival, str]] = field(default_factory=list)  # jobs admission refused
    _heap: list[tuple[float, int, Callable[[], None]]] = field(default_factory=list)
    _seq: count[int] = field(default_factory=count)
    _arrivals: dict[str, JobArrival] = field(default_factory=dict)
    _jobs: dict[str, o.Job] = field(default_factory=dict)  # every admitted job, kept after it is deleted
    _inputs_left: int = 0  # arrivals, faults and commands not yet applied
    _events_seen: int = 0
    _wake_at: set[float] = field(default_factory=set)
    executor: FakeExecutor = field(init=False)
    progress: Progress = field(default_factory=Progress)
    costs: Costs = FREE  # what starting, preempting and spreading a gang costs (progress.py); free by default
    _work: dict[str, float | None] = field(default_factory=dict)  # job key → its longest task's duration

    def __post_init__(self) -> None:
        if not self.costs.free:
            node_gpus = max((n.allocatable.get(GPU, 0.0) / 1000.0 for n in self.cluster.nodes), default=0.0)
            self.progress.costs = replace(self.costs, gpus_per_node=self.costs.gpus_per_node or node_gpus)
        self.executor = FakeExecutor(self.schedule, self.clock.now, self._run_of, _Pacing(self.progress))
        self.plane = ControlPlane(self.scheduler, self.executor, self.clock)
        self.executor.sink = self.plane
        self.plane.state.remaining = self._remaining
        self.plane.on_event = self._on_event
        for pc in self.cluster.priority_classes:
            self.plane.add_priority_class(pc)
        for q in self.cluster.queues:
            self.plane.add_queue(q)
        self.plane.add_nodes(list(self.cluster.nodes))
        for arrival in self.workload.jobs:
            self._input(arrival.submit_time, lambda a=arrival: self._submit(a))  # type: ignore[misc]
        for fault in self.workload.faults:
            self._input(fault.time, lambda f=fault: self._fault(f))  # type: ignore[misc]
        for cmd in self.workload.commands:
            self._input(cmd.time, lambda c=cmd: self._command(c))  # type: ignore[misc]

    def schedule(self, time: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (time, next(self._seq), fn))

    def _input(self, time: float, fn: Callable[[], None]) -> None:
        self._inputs_left += 1

        def apply() -> None:
            self._inputs_left -= 1
            fn()

        self.schedule(time, apply)

    def run(self) -> ControlPlane:
        # The run keeps every pod, event and attempt until its report is written, and the scheduler leaves
        # no cyclic garbage (`Session.release`): the cycle collector would only re-traverse the growing
        # history (a fifth of a whole-trace replay). It is paused for the run and restored after.
        paused = gc.isenabled()
        gc.disable()
        try:
            return self._run()
        finally:
            if paused:
                # What the run made sits in the youngest generation: moved to the oldest one untraversed,
                # or the collection the next allocation sets off would go through all of it.
                gc.freeze()
                gc.enable()
                gc.unfreeze()

    def _run(self) -> ControlPlane:
        heap = self._heap
        while heap:
            t = heap[0][0]
            if self.until is not None and t > self.until:
                break
            self.clock.set(t)
            while heap and heap[0][0] <= t:
                heapq.heappop(heap)[2]()
                if not heap or heap[0][0] > t:
                    self.plane.settle()
            self._wake_at.discard(t)
            self._arm_timers()
            if self.until is None and self._only_restart_loops_left():
                self.plane.record(
                    "SimulationStopped",
                    "simulation",
                    reason="RestartLoop",
                    message="nothing left to happen but pods restarting in place; pass --until to run on",
                    namespace="",
                )
                break
        if self.until is not None and self.clock.now() < self.until:
            self.clock.set(self.until)
        return self.plane

    def _arm_timers(self) -> None:
        wake = self.plane.next_wakeup()
        if wake is not None and wake not in self._wake_at:
            self._wake_at.add(wake)
            self.schedule(max(wake, self.clock.now()), self.plane.expire_ttls)
        changes = self.plane.state.order_changes  # a heap: when a time-driven order (las) next moves
        if changes and changes[0][0] > self.clock.now() and changes[0][0] not in self._wake_at:
            self._wake_at.add(changes[0][0])
            self.schedule(changes[0][0], self.plane.wake)

    def _only_restart_loops_left(self) -> bool:
        """Whether the run could only go on restarting pods in place (see the module docstring)."""
        events = self.plane.events
        restarted = any(e.kind == "PodRestart" for e in events[self._events_seen :])
        self._events_seen = len(events)
        # Checked only where a restart happened: a run without restarts ends by itself.
        if not restarted or self._inputs_left or self.plane.next_wakeup() is not None:
            return False
        restarts: dict[tuple[str, str], int] = {}
        for pod in self.plane.pods.values():
            if pod.status.phase in (o.POD_PENDING, o.POD_RUNNING):
                slot = (pod.job_key, pod.task)
                restarts[slot] = restarts.get(slot, 0) + pod.status.restart_count
        looping = False
        for key in self.plane.running:
            pod = self.plane.pods[key]
            duration, code = self._run_of(pod)
            if duration is None or not self.progress.will_end(key):
                continue  # runs until killed, or its gang is not up: nothing will come of it
            policy = pod.spec.restart_policy
            if not (policy == "Always" or (policy == "OnFailure" and code != 0)):
                return False  # it will end for good, and its job will react
            job = self.plane.jobs.get(pod.job_key)
            limit = task_restart_limit(job, pod.task) if job is not None else None
            if limit is not None and restarts.get((pod.job_key, pod.task), 0) < limit:
                return False  # a restart may still raise TaskFailed
            looping = True
        return looping  # else the heap runs dry by itself

    def _submit(self, arrival: JobArrival) -> None:
        job = arrival.job
        job = o.Job(
            o.ObjectMeta(
                name=job.metadata.name,
                namespace=job.metadata.namespace,
                labels=dict(job.metadata.labels),
                annotations=dict(job.metadata.annotations),
            ),
            job.spec,
        )
        try:
            self.plane.submit(job, valid=arrival.valid)
        except ValidationError as e:
            self.rejected.append((arrival, e.one_line()))
            return
        self._arrivals[job.key] = arrival
        self._jobs[job.key] = job
        model = speedup.from_annotations(job.metadata.annotations) if is_elastic(job) else None
        self.progress.add_job(job.key, job.spec.min_available, self._checkpoint_interval(job), model)

    def _fault(self, fault: Fault) -> None:
        if fault.node:
            self.plane.node_down(fault.node)
            return
        pod = self.plane.pods.get(fault.pod)
        if pod is None or pod.deletion_timestamp is not None:
            self._fault_ignored(fault, "the pod does not exist (any more) or is being deleted")
        elif fault.evict:
            self.plane.evict(fault.pod, "Evicted", "evicted by a fault")
        elif fault.exit_code is not None:
            if fault.pod in self.plane.running:
                self.executor.kill(fault.pod, fault.exit_code)
            else:
                self._fault_ignored(fault, f"the pod is {pod.status.phase}, not running")

    def _fault_ignored(self, fault: Fault, why: str) -> None:
        ns, _, name = fault.pod.rpartition("/")
        self.plane.record("FaultIgnored", name, reason="NotApplicable", message=why, namespace=ns)

    def _command(self, cmd: Command) -> None:
        self.plane.command(cmd.job, cmd.action)

    def _run_of(self, pod: o.Pod) -> tuple[float | None, int]:
        arrival = self._arrivals.get(pod.job_key)
        if arrival is None:
            return None, 0
        return arrival.run_of(pod.task)

    def arrival(self, job_key: str) -> JobArrival | None:
        return self._arrivals.get(job_key)

    def job(self, job_key: str) -> o.Job | None:
        """The job as it was admitted and as it last was: also after a TTL deleted it."""
        return self._jobs.get(job_key)

    def work_report(self, job_key: str) -> WorkReport:
        """What the job (namespace/name) lost so far: preemptions, lost and idle GPU-seconds.

        For the report's job rows: `row.update(sim.work_report(key).to_dict())` adds
        `preemptions`, `lostGpuSeconds` and `idleGpuSeconds`."""
        return self.progress.report(job_key, self.clock.now())

    def _checkpoint_interval(self, job: o.Job) -> float | None:
        raw = job.metadata.annotations.get(CHECKPOINT_INTERVAL)
        if raw is None:
            return None
        try:
            interval = parse_duration(raw)
        except ValueError as e:
            interval, why = -1.0, str(e)
        else:
            why = "must not be negative"
        if interval >= 0:
            return interval
        message = f"{CHECKPOINT_INTERVAL}: {why}; the job restarts from zero when preempted"
        self.plane.record(
            "CheckpointIgnored", job.name, reason="BadAnnotation", message=message, namespace=job.namespace
        )
        return None

    def _remaining(self, info: JobInfo) -> float | None:
        """The srtf oracle: seconds of progress the job still needs (its longest task's duration in all)."""
        key = f"{info.namespace}/{info.name}"
        work = self._work.get(key, 0.0)
        if work == 0.0:
            arrival = self._arrivals.get(key)
            if arrival is None:
                return None
            durations = [arrival.run_of(t.name)[0] for t in arrival.job.spec.tasks]
            work = self._work[key] = max((d for d in durations if d is not None), default=None)
        return self.progress.remaining(key, work, self.clock.now())

    def _on_event(self, event: o.Event) -> None:
        if event.kind in PREEMPTION_KINDS:
            pod = self.plane.pods.get(f"{event.namespace}/{event.object}")
            if pod is not None:
                self.progress.preempted(pod.job_key, event.time)


class _Pacing:
    """The executor's pacer over `Progress`: pods in, pod keys and times out."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        # GPUs a pod spec asks for, by the spec's identity (a task's pods share theirs; specs are frozen).
        self._gpus: dict[int, tuple[o.PodSpec, float]] = {}

    def started(self, pod: o.Pod, duration: float | None, restart: bool, now: float) -> list[tuple[str, float]]:
        spec = pod.spec
        found = self._gpus.get(id(spec))
        if found is None or found[0] is not spec:
            if len(self._gpus) >= 4096:
                self._gpus.clear()
            found = self._gpus[id(spec)] = (spec, spec.requests().get(GPU, 0.0) / 1000.0)  # milli-GPUs, as held
        return self.progress.start(pod.job_key, pod.key, duration, found[1], restart, now, pod.node_name)

    def stopped(self, key: str, now: float) -> list[tuple[str, float]]:
        return self.progress.stop(key, now)

    def ended(self, key: str, now: float) -> None:
        self.progress.ended(key, now)

    def ends_now(self, key: str, now: float) -> bool:
        return self.progress.ends_now(key, now)
