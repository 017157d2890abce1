"""A session: one scheduling cycle's plugins, dispatcher and results over the cluster state.

`Session.call(point, ...)` is the only way actions consult plugins. Node
filtering is vectorised: predicate plugins return masks over all nodes (cached
per pod-spec signature until node labels or taints change), resource fit is a
comparison per requested resource, and scoring sums the plugins' score vectors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np

from caldera.core import objects as o
from caldera.scheduler.config import PluginOption, SchedulerConfig
from caldera.scheduler.framework import (
    JOB_ORDER,
    JOB_READY,
    NODE_ORDER,
    ON_SESSION_CLOSE,
    ON_SESSION_OPEN,
    POINTS,
    PREDICATE,
    QUEUE_ORDER,
    TASK_ORDER,
    BoolMask,
    Indices,
    Plugin,
    Point,
    Rejection,
    Scores,
    Tiers,
)
from caldera.scheduler.info import PLACED
from caldera.scheduler.placement import Placements
from caldera.scheduler.state import FINISHED, READY, ClusterState, JobInfo, QueueInfo, TaskInfo, Vector
from caldera.scheduler.statement import Bind, Evict, Statement
from caldera.utils.records import immutable

R = TypeVar("R")


@immutable
class PodGroupUpdate:
    key: str  # namespace/name of the podgroup
    job: str
    phase: str
    conditions: tuple[o.PodGroupCondition, ...]


@dataclass(slots=True)
class CycleResult:
    """What one cycle decided: the only output of the scheduler."""

    binds: list[Bind] = field(default_factory=list)
    evictions: list[Evict] = field(default_factory=list)
    nominations: list[Bind] = field(default_factory=list)
    podgroups: list[PodGroupUpdate] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.binds or self.evictions or self.podgroups)


class Session:
    def __init__(
        self,
        state: ClusterState,
        config: SchedulerConfig,
        now: float,
        registry: Mapping[str, type[Plugin]],
        layout: HookLayout | None = None,
    ) -> None:
        self.state = state
        self.config = config
        self.now = now
        self.result = CycleResult()
        self.unschedulable: dict[str, str] = {}  # job key → why it could not be placed this cycle
        self.not_enqueued: dict[str, str] = {}  # job key → why enqueue did not admit it
        self._opened: dict[str, str] = {}  # podgroup phase at session open, for jobs whose phase changed
        self.held: list[Statement] = []  # allocations kept until the session ends (pipelined or reserved jobs)
        self.touched: set[str] = set()
        self._registry = registry
        self._layout = layout if layout is not None else hook_layout(config, registry)
        self._hooks: dict[str, Tiers] = {}
        self._order_parts: tuple[Tiers, Tiers] | None = None  # node_scores' two parts of the node-order hooks
        self.plugins: dict[str, Plugin] = {}  # built on first use: most cycles consult few plugins
        if self._layout.implemented[ON_SESSION_OPEN.name]:  # plugins with time-driven state catch up before any action
            self.call(ON_SESSION_OPEN)

    def call(self, point: Point[R], *args: object) -> R:
        hooks = self._hooks.get(point.name)
        if hooks is None:
            hooks = self._hooks[point.name] = self._collect(point)
        return point.reduce(hooks, args)

    def implemented(self, point: Point[Any]) -> bool:
        """Whether any configured plugin answers at `point` (else its reducer's default applies)."""
        return self._layout.implemented[point.name]

    def _collect(self, point: Point[Any]) -> Tiers:
        name = point.name
        return [[getattr(self.plugin(p), name) for p in tier] for tier in self._layout.points[name]]

    def plugin(self, name: str) -> Plugin:
        found = self.plugins.get(name)
        if found is None:
            found = self.plugins[name] = self._registry[name](self, self._layout.options[name].arguments)
        return found

    def set_phase(self, job: JobInfo, phase: str) -> None:
        """Change a podgroup's phase now (later decisions in this cycle see it); reported on close."""
        self._opened.setdefault(job.key, job.pg_phase)
        self.state.set_pg_phase(job, phase, self.now)
        self.touched.add(job.key)

    # ------------------------------------------------------------ ordering

    def job_key(self, job: JobInfo) -> tuple[object, ...]:
        return (*self.call(JOB_ORDER, job), job.creation, job.key)

    def queue_key(self, queue: QueueInfo) -> tuple[object, ...]:
        return (*self.call(QUEUE_ORDER, queue), queue.name)

    def task_key(self, task: TaskInfo) -> tuple[object, ...]:
        return (*self.call(TASK_ORDER, task), task.index, task.creation, task.key)

    def ordered_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        if len(tasks) < 2:
            return list(tasks)  # nothing to order (task-order hooks are keys: asking them changes nothing)
        return sorted(tasks, key=self.task_key)

    # ------------------------------------------------------------ placement

    def static_rejections(self, task: TaskInfo) -> list[Rejection]:
        """Predicate rejections for `task` (depend only on its pod spec and the nodes' labels and taints)."""
        sig = task.signature
        cache = self.state.predicate_cache
        if cache.get("__version__") != self.state.node_version:
            cache.clear()
            cache["__version__"] = self.state.node_version
        found = cache.get(sig)
        if found is None:
            found = cache[sig] = self.call(PREDICATE, task)
        return cast(list[Rejection], found)

    def free(self, future: bool) -> Vector:
        """Idle resources per node; with `future`, counting what releasing tasks will give back."""
        s = self.state
        idle = s.alloc - s.used - s.nominated
        return idle + s.releasing if future else idle

    def feasible(self, task: TaskInfo, free: Vector, extra: Vector | None = None) -> BoolMask:
        """Nodes where `task` passes the predicates and its request fits `free` (+ `extra`)."""
        s = self.state
        mask = s.schedulable.copy()
        if task.unknown_resource:
            mask[:] = False
            return mask
        for r in self.static_rejections(task):
            mask &= r.mask
        req = task.req
        for d in task.dims:
            have = free[d] if extra is None else free[d] + extra[d]
            mask &= have >= req[d]
        return mask

    def best_node(self, task: TaskInfo, mask: BoolMask) -> int:
        """The highest-scoring node among `mask` (lowest index on ties); -1 if none."""
        candidates = np.flatnonzero(mask)
        if candidates.size == 0:
            return -1
        if candidates.size == 1:
            return int(candidates[0])
        scores = self.call(NODE_ORDER, task, candidates)
        if scores is None:
            return int(candidates[0])
        return int(candidates[int(np.argmax(scores))])

    def best_fit(self, task: TaskInfo, future: bool) -> int:
        """`best_node(task, feasible(task, free(future)))`, from the values `placement.py` keeps."""
        placements = self.state.placements
        if placements is None or placements.layout is not self._layout:
            placements = self.state.placements = Placements(self._layout)
        return placements.best(self, task, future)

    def node_scores(self, task: TaskInfo, nodes: Indices, kept: bool) -> Scores | None:
        """The node-order plugins' summed scores of `nodes`, in two parts whose sum is `call(NODE_ORDER, ...)`'s:
        with `kept`, the leading plugins whose scores are local (placement.py keeps their sum per node), else
        the plugins after them (added to the kept sum in the same order the whole sum adds them)."""
        parts = self._order_parts
        if parts is None:
            flat = [hook for tier in self._collect(NODE_ORDER) for hook in tier]
            k = self._layout.local_order
            parts = self._order_parts = ([flat[:k]], [flat[k:]])
        return NODE_ORDER.reduce(parts[0] if kept else parts[1], (task, nodes))

    def fit_error(self, task: TaskInfo) -> str:
        """Why no node takes `task`, in kube-scheduler's words: `0/4 nodes are available: 4 Insufficient cpu.`"""
        s = self.state
        n = len(s.node_names)
        if task.unknown_resource:
            return f"0/{n} nodes are available: {n} Insufficient {task.unknown_resource}."
        # As kube-scheduler: a node counts once, under the first filter that rejects it, except that
        # resource fit names every resource the node lacks.
        counts: dict[str, int] = {}
        left = s.schedulable.copy()
        down = ~s.schedulable
        if down.any():
            counts["node(s) were unschedulable"] = int(down.sum())
        for r in self.static_rejections(task):
            bad = int((~r.mask & left).sum())
            left &= r.mask
            if bad:
                counts[r.reason] = counts.get(r.reason, 0) + bad
        free = self.free(future=False)
        for d in np.flatnonzero(task.req):
            bad = int(((free[d] < task.req[d]) & left).sum())
            if bad:
                name = "Too many pods" if s.resources[d] == "pods" else f"Insufficient {s.resources[d]}"
                counts[name] = bad
        reasons = ", ".join(sorted(f"{c} {r}" for r, c in counts.items()))  # sorted as kube-scheduler sorts them
        return f"0/{n} nodes are available: {reasons}." if reasons else f"0/{n} nodes are available."

    # ------------------------------------------------------------ closing

    def close(self) -> CycleResult:
        for stmt in self.held:
            stmt.discard()
        if self.held:
            self.state.version += 1  # held resources are free again for jobs that lost to them
        self.call(ON_SESSION_CLOSE)
        now = self.now
        for key in sorted(self.state.dirty_jobs | self.touched | set(self.not_enqueued)):
            job = self.state.jobs.get(key)
            if job is None or job.released:
                continue
            before = self._opened.get(key, job.pg_phase)
            phase = self._podgroup_phase(job)
            conditions = self._conditions(job, now)
            if phase != job.pg_phase:
                self.state.set_pg_phase(job, phase, now)
            if phase != before or conditions != job.pg_conditions:
                job.pg_conditions = conditions
                self.result.podgroups.append(PodGroupUpdate(job.key, job.name, phase, tuple(conditions)))
            job.status_of_session = key in self.unschedulable or key in self.not_enqueued
        self.state.dirty_jobs.clear()
        return self.result

    def release(self) -> None:
        """Drop the plugins and hooks once the session is over. Plugins refer back to their session:
        unlinked, a finished session is freed at once instead of waiting for the cycle collector,
        which a replay creating hundreds of thousands of sessions would keep busy."""
        self.plugins.clear()
        self._hooks.clear()
        self._order_parts = None
        self.held.clear()

    def _podgroup_phase(self, job: JobInfo) -> str:
        """Volcano's getPodGroupPhase."""
        running = ready = finished = 0
        for status, n in job.counts.items():  # the job's tallies, once (`JobInfo.count` per set)
            if status in READY:
                ready += n
                if status in PLACED:
                    running += n
            if status in FINISHED:
                finished += n
        if running and job.key in self.unschedulable:
            return o.PG_UNKNOWN
        if job.tasks and ready >= job.min_available:
            if finished == len(job.tasks):
                return o.PG_COMPLETED
            return o.PG_RUNNING
        return o.PG_INQUEUE if job.pg_phase == o.PG_INQUEUE else o.PG_PENDING

    def _conditions(self, job: JobInfo, now: float) -> list[o.PodGroupCondition]:
        why = self.unschedulable.get(job.key)
        pending = self.not_enqueued.get(job.key)
        if why is not None:
            kind, status, reason, message = "Unschedulable", "True", "NotEnoughResources", why
        elif pending is not None and job.pg_phase == o.PG_PENDING:
            kind, status, reason, message = "Unschedulable", "True", "NotEnqueued", pending
        elif self.call(JOB_READY, job) and job.tasks:
            kind, status, reason, message = "Scheduled", "True", "", ""
        else:
            return job.pg_conditions
        old = next((c for c in job.pg_conditions if c.type == kind), None)
        if old is not None and (old.status, old.reason, old.message) == (status, reason, message):
            return job.pg_conditions
        others = [c for c in job.pg_conditions if c.type not in ("Unschedulable", "Scheduled")]
        return [*others, o.PodGroupCondition(kind, status, reason, message, now)]


@dataclass(frozen=True, slots=True)
class HookLayout:
    """What every session of one configuration shares: who implements each point, and each plugin's options."""

    points: Mapping[str, list[list[str]]]  # point name → the implementing plugins' names, tier by tier
    implemented: Mapping[str, bool]  # point name → whether any plugin implements it
    options: Mapping[str, PluginOption]  # plugin name → its first entry in the tiers
    local_order: int  # how many node-order plugins, from the first, have local scores (`Plugin.local_scores`)
    node_order_plugins: int  # how many node-order plugins there are


def hook_layout(config: SchedulerConfig, registry: Mapping[str, type[Plugin]]) -> HookLayout:
    """For every point, the plugin names implementing it, tier by tier (the same for every session)."""
    points = {
        point.name: [
            [o.name for o in tier if point in registry[o.name].implements() and o.enabled(point.flag)]
            for tier in config.tiers
        ]
        for point in POINTS
    }
    options: dict[str, PluginOption] = {}
    for tier in config.tiers:
        for opt in tier:
            options.setdefault(opt.name, opt)
    ordering = [name for tier in points[NODE_ORDER.name] for name in tier]
    local = next((i for i, name in enumerate(ordering) if not registry[name].local_scores), len(ordering))
    return HookLayout(points, {name: any(tiers) for name, tiers in points.items()}, options, local, len(ordering))
