"""The simulation: the real control plane (controller + scheduler) on the fake executor and a virtual clock.

Everything that happens is an entry in one time-ordered heap: job arrivals,
faults, pod endings and the control plane's timers. At each instant all entries
due are applied, then the control plane settles (reconciles and schedules until
nothing changes); then the clock jumps to the next entry. Ties are broken by
insertion order, so the same inputs give the same run, byte for byte.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count

from caldera.backends.fake import FakeExecutor
from caldera.core import objects as o
from caldera.core.errors import ValidationError
from caldera.scheduler.scheduler import Scheduler
from caldera.sim.inputs import Cluster, Fault, JobArrival, Workload
from caldera.system.control import ControlPlane
from caldera.utils.clock import ManualClock


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
    _wake_at: set[float] = field(default_factory=set)
    executor: FakeExecutor = field(init=False)

    def __post_init__(self) -> None:
        self.executor = FakeExecutor(self.schedule, self.clock.now, self._run_of)
        self.plane = ControlPlane(self.scheduler, self.executor, self.clock)
        self.executor.sink = self.plane
        for pc in self.cluster.priority_classes:
            self.plane.add_priority_class(pc)
        for q in self.cluster.queues:
            self.plane.add_queue(q)
        self.plane.add_nodes(list(self.cluster.nodes))
        for arrival in self.workload.jobs:
            self.schedule(arrival.submit_time, lambda a=arrival: self._submit(a))  # type: ignore[misc]
        for fault in self.workload.faults:
            self.schedule(fault.time, lambda f=fault: self._fault(f))  # type: ignore[misc]

    def schedule(self, time: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (time, next(self._seq), fn))

    def run(self) -> ControlPlane:
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
            if t in self._wake_at:
                self._wake_at.discard(t)
            self._arm_timers()
        if self.until is not None and self.clock.now() < self.until:
            self.clock.set(self.until)
        return self.plane

    def _arm_timers(self) -> None:
        wake = self.plane.next_wakeup()
        if wake is not None and wake not in self._wake_at:
            self._wake_at.add(wake)
            self.schedule(max(wake, self.clock.now()), self.plane.expire_ttls)

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
            self.plane.submit(job)
        except ValidationError as e:
            self.rejected.append((arrival, e.one_line()))
            return
        self._arrivals[job.key] = arrival

    def _fault(self, fault: Fault) -> None:
        if fault.node:
            self.plane.node_down(fault.node)
            return
        key = fault.pod if "/" in fault.pod else f"default/{fault.pod}"
        if key not in self.plane.pods:
            return
        if fault.evict:
            self.plane.evict(key, "Evicted", "evicted by a fault")
        elif fault.exit_code is not None and key in self.plane.running:
            self.executor.kill(key, fault.exit_code)

    def _run_of(self, pod: o.Pod) -> tuple[float | None, int]:
        arrival = self._arrivals.get(f"{pod.metadata.namespace}/{pod.job}")
        if arrival is None:
            return None, 0
        return arrival.run_of(pod.task)

    def arrival(self, job_key: str) -> JobArrival | None:
        return self._arrivals.get(job_key)
