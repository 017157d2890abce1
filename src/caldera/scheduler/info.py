"""The scheduler's per-cycle view of tasks, jobs and queues (Volcano's TaskInfo, JobInfo, QueueInfo).

Plain objects with running totals; `ClusterState` (state.py) owns them and is the only
writer of their totals. Task statuses and the status sets the totals are defined by live here.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from caldera.core import objects as o
from caldera.scheduler.service import Service

Vector = npt.NDArray[np.float64]


# Resources nodes always have but cluster files rarely declare; Volcano does not account them either.
UNTRACKED_UNLESS_DECLARED = frozenset({"ephemeral-storage", "storage"})


class TaskStatus(enum.Enum):
    # Members are singletons, so identity hashing is right, and in C: Enum's own __hash__ is Python code,
    # and `status in OCCUPYING` runs millions of times in a replay.
    __hash__ = object.__hash__

    PENDING = "Pending"
    ALLOCATED = "Allocated"  # placed in this session, not yet bound
    PIPELINED = "Pipelined"  # placed on resources still being released
    BINDING = "Binding"  # bind committed, pod not yet seen bound
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"  # evicted or deleted, process still ending
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


OCCUPYING = frozenset(
    {TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.RELEASING}
)
# Counted in the job's and queue's allocated (a releasing task still uses its node, not its share).
ALLOCATED = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})
READY = ALLOCATED | {TaskStatus.SUCCEEDED}
FINISHED = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})
PLACED = frozenset({TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})  # on a node, for good
# The phase of a job whose PodGroup was deleted while pods of it still hold nodes (`ClusterState.release_podgroup`):
# kept for their accounting until they are gone, and, being no PodGroup phase, read by nothing as admitted, pending
# or holding room; never given a status again (Volcano's scheduler skips a job without a PodGroup).
RELEASED = "Released"


@dataclass(eq=False, slots=True)
class TaskInfo:
    """One pod as the scheduler sees it."""

    key: str  # namespace/name of the pod
    name: str
    job: JobInfo
    task: str
    index: int
    req: Vector  # request per resource dimension, pods included
    priority: int
    spec: o.PodSpec
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    creation: float
    status: TaskStatus = TaskStatus.PENDING
    node: int = -1  # column of the node it occupies or is pipelined to
    unknown_resource: str = ""  # a requested resource no node has
    run_since: float | None = None  # when its observed run started (None: not running); see service.py
    run_gpus: float = 0.0  # the GPUs that run counts in its job's attained service
    # Fixed for the task's life, computed once (a dimension added later is 0 in `req`, changing none of them):
    best_effort: bool = field(init=False)  # asks for nothing but a pod slot (Volcano's BestEffort)
    dims: tuple[int, ...] = field(init=False)  # the dimensions it requests (nonzero in `req`)
    signature: tuple[object, ...] = field(init=False)  # what the predicates look at (node selection, tolerations)

    def __post_init__(self) -> None:
        self.dims = tuple(d for d, amount in enumerate(self.req.tolist()) if amount)  # np.flatnonzero's, sooner
        self.best_effort = not self.unknown_resource and all(d == 0 for d in self.dims)  # dimension 0 is pods
        spec = self.spec
        self.signature = (tuple(sorted(spec.node_selector.items())), spec.node_affinity, spec.tolerations)

    @property
    def occupying(self) -> bool:
        return self.status in OCCUPYING


@dataclass(eq=False, slots=True)
class JobInfo:
    """One PodGroup and the tasks of its job."""

    key: str  # namespace/podgroup name
    name: str  # the job's name
    namespace: str
    queue: str
    priority: int
    min_available: int
    min_task_member: dict[str, int]
    creation: float
    pg_phase: str
    annotations: Mapping[str, str]
    min_resources: Vector
    allocated: Vector
    tasks: dict[str, TaskInfo] = field(default_factory=dict)  # by pod key
    pg_conditions: list[o.PodGroupCondition] = field(default_factory=list)
    # Its PodGroup's status was last written from a session's verdicts (unschedulable, not enqueued): the next
    # session may write another whatever its tasks do (ClusterState._transition).
    status_of_session: bool = False
    failed_at: int = -1  # state version at the last failed placement; -1: not failed since it last changed
    evict_failed_at: dict[str, int] = field(default_factory=dict)  # the same, per eviction (Preempt, Reclaim)
    fit_errors: str = ""  # why it last failed, for the Unschedulable condition
    inqueue_since: float | None = None
    counts: dict[TaskStatus, int] = field(default_factory=dict)  # tasks by status, kept by ClusterState
    service: Service = field(default_factory=Service)  # GPU-seconds run so far, across runs

    @property
    def released(self) -> bool:
        return self.pg_phase == RELEASED

    def count(self, statuses: frozenset[TaskStatus]) -> int:
        n = 0
        for s, k in self.counts.items():  # a handful of statuses at most
            if s in statuses:
                n += k
        return n

    def ready_count(self) -> int:
        return self.count(READY)

    def pending_tasks(self) -> list[TaskInfo]:
        return [t for t in self.tasks.values() if t.status is TaskStatus.PENDING]


@dataclass(eq=False, slots=True)
class QueueInfo:
    name: str
    weight: int
    capability: Vector  # +inf where unlimited
    guarantee: Vector
    deserved_spec: Vector  # spec.deserved (capacity plugin); 0 where unset
    has_deserved: bool
    reclaimable: bool
    state: str
    priority: int
    parent: str
    allocated: Vector
    request: Vector  # sum of requests of all unfinished tasks
    inqueue: Vector  # minResources of Inqueue jobs not yet running
