"""Why a job waits: per node class and for its queue, what blocks it, and whether it ever could run.

`explain(state, job, podgroup)` reads the job's spec (its pods may not exist yet: they are
created once the PodGroup is Inqueue) against the scheduler's current view of nodes and
queues, without changing anything. A *node class* is the nodes that look the same to this
job: the same allocatable resources, taints and schedulability, and the same verdict for
each of its tasks' nodeSelector and affinity (labels that only tell nodes apart, such as
their host names, do not split a class).

Two kinds of answers, told apart:
- `never`: as the nodes and the queue are, the job cannot run however long it waits (a
  task no node takes: a selector nothing matches, a taint it does not tolerate, a request
  larger than any node, a resource no node has; fewer pod slots in the whole cluster, empty,
  than the gang needs; a queue capability below the gang's minimum). It is sound: only what
  is certain is said; a gang that passes may still never fit in some corner of bin packing.
- `now`: what is in use stands in the way (capacity other pods hold, the queue's capability
  in use, a Closed queue); it may start once that changes.
Counts are per task, each task alone against the idle resources (tasks of one job compete
for the same nodes: the counts bound what fits, they do not pack the gang).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from caldera.core import objects as o
from caldera.core.resources import PODS, from_units
from caldera.scheduler.plugins.predicates import selects, untolerated
from caldera.scheduler.state import ClusterState, Vector

Counts = npt.NDArray[np.int_]
Dims = npt.NDArray[np.intp]
EPSILON = 1e-6  # requests and allocatables are integers in scheduler units: guard the division only


@dataclass(frozen=True, slots=True)
class TaskFit:
    """One task of the job on one node class."""

    task: str
    need: int | None  # pods of it the gang needs (None: the job's minimum binds only in total)
    per_node: int  # pods of it one empty node of the class holds (0: never)
    now: int  # pods of it the class's idle resources hold now
    blocks: str  # why the class takes none of it (now or ever); "" when it takes some now


@dataclass(frozen=True, slots=True)
class NodeClass:
    nodes: tuple[str, ...]
    allocatable: Mapping[str, float]  # per node, scheduler units
    labels: Mapping[str, str]  # the labels all its nodes share
    taints: tuple[o.Taint, ...]
    schedulable: bool
    tasks: tuple[TaskFit, ...]


@dataclass(frozen=True, slots=True)
class QueueFit:
    name: str
    state: str
    capability: Mapping[str, float]  # the limited resources only
    allocated: Mapping[str, float]
    minimum: Mapping[str, float]  # the job's gang minimum
    never: str  # why the queue can never hold the job ("" if it can)
    now: str  # why it does not take the job now ("" if nothing in it stands in the way)


@dataclass(frozen=True, slots=True)
class Explanation:
    never: tuple[str, ...]  # why the job can never run, as the cluster and its queue are
    now: tuple[str, ...]  # what stands in its way now
    queue: QueueFit
    classes: tuple[NodeClass, ...]


def explain(state: ClusterState, job: o.Job, podgroup: o.PodGroup) -> Explanation:
    tasks = [t for t in job.spec.tasks if t.replicas > 0]
    per_task = bool(podgroup.min_task_member) and podgroup.min_member >= sum(podgroup.min_task_member.values())
    needs = {t.name: (podgroup.min_task_member.get(t.name, t.replicas) if per_task else None) for t in tasks}
    classes = _classes(state, tasks, needs)
    if not classes:
        return Explanation(("the cluster has no nodes",), (), _queue(state, job, podgroup, state.vector({})[0]), ())
    never: list[str] = []
    now: list[str] = []
    unfit: list[str] = []  # tasks no node takes, when only the job's total minimum binds
    empty = {
        t.name: sum(f.per_node * len(c.nodes) for c in classes for f in c.tasks if f.task == t.name) for t in tasks
    }
    idle = {t.name: sum(f.now for c in classes for f in c.tasks if f.task == t.name) for t in tasks}
    for t in tasks:
        need = needs[t.name]
        if need == 0:
            continue
        if empty[t.name] == 0:
            why = f"task {t.name} fits no node: {_why_not(classes, t.name)}"
            (never if need is not None else unfit).append(why)
        elif need is not None and empty[t.name] < need:
            never.append(f"task {t.name} needs {need} pods; empty, the nodes would hold {empty[t.name]} of them")
        elif need is not None and idle[t.name] < need:
            now.append(
                f"task {t.name}: {idle[t.name]} of the {need} pods it needs fit now ({_why_not(classes, t.name)})"
            )
    if not per_task:
        empty_total = sum(min(t.replicas, empty[t.name]) for t in tasks)
        idle_total = sum(min(t.replicas, idle[t.name]) for t in tasks)
        if empty_total < podgroup.min_member:
            held = f"the job needs {podgroup.min_member} pods; empty, the nodes would hold {empty_total} of them"
            never.append("; ".join([held, *unfit]))
        elif idle_total < podgroup.min_member:
            now.append(f"{idle_total} of the {podgroup.min_member} pods the job needs fit now")
    total = state.total
    minimum, _ = state.vector(podgroup.min_resources)
    over = [d for d in np.flatnonzero(minimum > total + EPSILON) if state.resources[d] != PODS]
    if over:
        never.append(
            f"the job's minimum asks for {_amounts(state, minimum, over)}; the nodes have {_amounts(state, total, over)}"
        )
    queue = _queue(state, job, podgroup, minimum)
    if queue.never:
        never.append(queue.never)
    if queue.now:
        now.append(queue.now)
    return Explanation(tuple(dict.fromkeys(never)), tuple(now), queue, classes)


# ---------------------------------------------------------------- node classes


def _classes(state: ClusterState, tasks: list[o.TaskSpec], needs: Mapping[str, int | None]) -> tuple[NodeClass, ...]:
    n = len(state.node_names)
    if n == 0:
        return ()
    free = state.alloc - state.used - state.nominated
    fits: dict[str, tuple[list[bool], list[int], list[int], str]] = {}  # task → (passes, per node, now, unknown)
    for t in tasks:
        spec = t.template.spec
        req, unknown = state.vector({**spec.requests(), PODS: 1.0})
        dims = np.flatnonzero(req)
        passes = [
            bool(state.schedulable[i])
            and selects(spec, dict(state.node_labels[i]))
            and untolerated(state.node_taints[i], spec.tolerations) is None
            for i in range(n)
        ]
        empty_slots = _slots(state.alloc, req, dims)
        idle_slots = _slots(np.maximum(free, 0.0), req, dims)
        fits[t.name] = (passes, empty_slots.tolist(), idle_slots.tolist(), unknown)
    groups: dict[tuple[object, ...], list[int]] = {}
    for i in range(n):
        key = (
            tuple(state.alloc[:, i].tolist()),
            state.node_taints[i],
            bool(state.schedulable[i]),
            tuple(fits[t.name][0][i] for t in tasks),
        )
        groups.setdefault(key, []).append(i)
    out = []
    for rows in groups.values():
        first = rows[0]
        shared = dict(state.node_labels[first])
        for i in rows[1:]:
            shared = {k: v for k, v in shared.items() if state.node_labels[i].get(k) == v}
        task_fits = []
        for t in tasks:
            passes, per_node, idle, unknown = fits[t.name]
            ok = passes[first] and not unknown
            task_fits.append(
                TaskFit(
                    task=t.name,
                    need=needs[t.name],
                    per_node=per_node[first] if ok else 0,
                    now=sum(idle[i] for i in rows) if ok else 0,
                    blocks=_blocks(state, t, rows, unknown, ok and per_node[first] > 0, free),
                )
            )
        out.append(
            NodeClass(
                nodes=tuple(state.node_names[i] for i in rows),
                allocatable=state.as_dict(state.alloc[:, first]),
                labels=shared,
                taints=state.node_taints[first],
                schedulable=bool(state.schedulable[first]),
                tasks=tuple(task_fits),
            )
        )
    return tuple(out)


def _slots(capacity: Vector, req: Vector, dims: Dims) -> Counts:
    """Per node (column), how many pods asking `req` the `capacity` holds."""
    if dims.size == 0:
        return np.zeros(capacity.shape[1], dtype=np.int_)
    ratios = np.floor(capacity[dims, :] / req[dims, None] + EPSILON)
    slots: Counts = np.maximum(ratios.min(axis=0), 0).astype(np.int_)
    return slots


def _blocks(
    state: ClusterState, task: o.TaskSpec, rows: list[int], unknown: str, fits_empty: bool, free: Vector
) -> str:
    """Why the nodes `rows` (one class) take no pod of `task`: for ever, or now; "" when some fits now."""
    i, spec = rows[0], task.template.spec
    if unknown:
        return f"no node has {unknown}"
    if not state.schedulable[i]:
        return "not schedulable (down or cordoned)"
    taint = untolerated(state.node_taints[i], spec.tolerations)
    if taint is not None:
        return f"untolerated taint {taint.key}{'=' + taint.value if taint.value else ''}:{taint.effect}"
    if not selects(spec, dict(state.node_labels[i])):
        wanted = ", ".join(f"{k}={v}" for k, v in sorted(spec.node_selector.items())) or "its node affinity"
        return f"labels do not match {wanted}"
    req, _ = state.vector({**spec.requests(), PODS: 1.0})
    if not fits_empty:
        big = [d for d in np.flatnonzero(req) if req[d] > state.alloc[d, i] + EPSILON]
        return f"asks for {_amounts(state, req, big)}, a node has {_amounts(state, state.alloc[:, i], big)}"
    short = [d for d in np.flatnonzero(req) if all(free[d, r] + EPSILON < req[d] for r in rows)]
    if short:
        names = ", ".join("pod slots" if state.resources[d] == PODS else state.resources[d] for d in short)
        return f"{names} in use"
    return ""


def _why_not(classes: tuple[NodeClass, ...], task: str) -> str:
    parts = []
    for c in classes:
        for f in c.tasks:
            if f.task == task and f.blocks:
                parts.append(f"{len(c.nodes)} node(s): {f.blocks}")
    return "; ".join(parts) or "no room"


# ---------------------------------------------------------------- the queue


def _queue(state: ClusterState, job: o.Job, podgroup: o.PodGroup, minimum: Vector) -> QueueFit:
    name = podgroup.queue or job.spec.queue
    q = state.queues.get(name)
    if q is None:
        return QueueFit(name, "Unknown", {}, {}, state.as_dict(minimum), "", f"queue {name} does not exist")
    limited = [d for d in range(len(q.capability)) if np.isfinite(q.capability[d])]
    capability = {state.resources[d]: float(q.capability[d]) for d in limited}
    allocated = state.as_dict(q.allocated)
    never = ""
    over = [d for d in limited if d < len(minimum) and minimum[d] > q.capability[d] + EPSILON]
    if over:
        never = (
            f"queue {name}'s capability ({_amounts(state, q.capability, over)}) is less than the job's minimum "
            f"({_amounts(state, minimum, over)})"
        )
    now = ""
    if q.state != o.QUEUE_OPEN:
        now = f"queue {name} is {q.state}: it admits no job"
    elif not never and podgroup.phase == o.PG_PENDING:
        short = [d for d in limited if d < len(minimum) and q.allocated[d] + minimum[d] > q.capability[d] + EPSILON]
        if short:
            now = (
                f"queue {name} has {_amounts(state, q.allocated, short)} of its capability "
                f"({_amounts(state, q.capability, short)}) in use"
            )
    return QueueFit(name, q.state, capability, allocated, state.as_dict(minimum), never, now)


def _amounts(state: ClusterState, v: Vector, dims: Sequence[int | np.intp]) -> str:
    return ", ".join(f"{state.resources[d]} {from_units(state.resources[d], float(v[d]))}" for d in dims)
