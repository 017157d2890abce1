"""Where a task goes: the best node that fits it, kept per request shape and updated node by node.

`Session.best_node(task, feasible(task, free(...)))` costs a dozen passes over every
node per pod. Placing one pod changes one node, so for each request shape (the
task's request vector, what the predicates look at, and whether releasing
resources count) `Placements` keeps every node's value: the summed node-order
score where the task fits, -inf where it does not. A query first recomputes the
nodes whose `used`, `releasing` or `nominated` changed since that shape was last
asked for (the state's change log, `NodeArrays.changes_since`), then takes the
first maximum: one pass.

Most changed nodes look like many others: identical nodes filled by pods of one shape
pass through a few states only. A node's value is a function of its column of the node
arrays (alloc, used, nominated and, with `future`, releasing), its schedulability and
its static predicate verdicts, so each shape also remembers the value of every column
it computed (`_Shape.seen`) and a changed node whose column was seen takes that value
instead of a call to the plugins (when few nodes changed; many are computed at once).

What is kept is the sum of the node-order plugins that declare `local_scores` (a node's
score depends on that node's column, the task's request and the plugin's arguments,
nothing else), from the first plugin up to the first that does not. The plugins after
that (consolidate, which looks at where the task's own job already is; task-topology)
are asked at each query over every node, and their sum is added to the kept values:
one pass more, instead of a dozen.

Invariant: the answer is the node `best_node(task, feasible(task, free(future)))`
gives, bit for bit. Fit is the same comparisons; each recomputed score is the
same elementwise operations as a whole-vector one; the scores are added in the
order the whole sum adds them (the kept leading part first, then each later plugin's);
the first maximum over every node is the first maximum over the candidates (the
rest are -inf). A remembered value is the same operations on the same numbers, and
remembered values are forgotten with the shape's version (nodes' labels, taints or
resources changed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from caldera.scheduler.framework import Indices, Rejection, Scores
from caldera.scheduler.info import TaskInfo

if TYPE_CHECKING:
    from caldera.scheduler.session import HookLayout, Session

MAX_SHAPES = 256  # request shapes kept per state; the least recently asked for goes first
RECOMPUTE_SHARE = 8  # more than 1/8 of the nodes changed: recompute them all at once
MAX_SEEN = 4096  # columns remembered per shape; emptied when full
SEEN_UP_TO = 16  # more changed nodes than this: one vector computation beats looking each one up


@dataclass(slots=True)
class _Shape:
    version: tuple[int, int]  # (node_version, number of resources) the values were computed at
    position: int  # the change log position they are current to
    values: Scores  # per node: the kept plugins' summed score where the task fits, -inf where it does not
    seen: dict[bytes, float] = field(default_factory=dict)  # a node's state (`_column`) → its value


class Placements:
    """Per request shape, every node's value for one scheduler configuration (`layout`)."""

    def __init__(self, layout: HookLayout) -> None:
        self.layout = layout
        self.shapes: dict[tuple[object, ...], _Shape] = {}
        self._everywhere: Indices = np.arange(0, dtype=np.intp)  # every node's index, for the later plugins

    def best(self, ssn: Session, task: TaskInfo, future: bool) -> int:
        """The first highest-scoring node that fits `task` (-1 if none)."""
        state = ssn.state
        n = len(state.node_names)
        if task.unknown_resource or n == 0:
            return -1
        key = (task.req.tobytes(), task.signature, future)
        version = (state.node_version, len(state.resources))
        shape = self.shapes.pop(key, None)
        if shape is None or shape.version != version:
            shape = _Shape(version, state.change_position, _values(ssn, task, future, None))
        else:
            changed = state.changes_since(shape.position, n // RECOMPUTE_SHARE)
            if changed is None:
                shape.values = _values(ssn, task, future, None)
            elif changed:
                _catch_up(ssn, task, future, shape, sorted(set(changed)))
            shape.position = state.change_position
        self.shapes[key] = shape  # now the most recently asked for
        if len(self.shapes) > MAX_SHAPES:
            del self.shapes[next(iter(self.shapes))]
        values = shape.values
        if self.layout.local_order < self.layout.node_order_plugins:
            if len(self._everywhere) != n:
                self._everywhere = np.arange(n, dtype=np.intp)
            later = ssn.node_scores(task, self._everywhere, kept=False)
            if later is not None:
                values = values + later  # -inf where the task does not fit stays -inf
        best = int(np.argmax(values))
        return -1 if values[best] == -np.inf else best


def _catch_up(ssn: Session, task: TaskInfo, future: bool, shape: _Shape, changed: list[int]) -> None:
    """Bring the values of the `changed` nodes up to date: remembered by their column, else computed."""
    values, seen = shape.values, shape.seen
    if len(changed) > SEEN_UP_TO:
        nodes = np.array(changed, dtype=np.intp)
        values[nodes] = _values(ssn, task, future, nodes)
        return
    rejections = ssn.static_rejections(task)
    unseen: list[tuple[int, bytes]] = []
    for n in changed:
        column = _column(ssn, rejections, future, n)
        value = seen.get(column)
        if value is None:
            unseen.append((n, column))
        else:
            values[n] = value
    if not unseen:
        return
    nodes = np.array([n for n, _ in unseen], dtype=np.intp)
    computed = _values(ssn, task, future, nodes)
    values[nodes] = computed
    if len(seen) + len(unseen) > MAX_SEEN:
        seen.clear()
    for (_, column), value in zip(unseen, computed.tolist(), strict=True):
        seen[column] = value


def _column(ssn: Session, rejections: list[Rejection], future: bool, n: int) -> bytes:
    """Everything node `n`'s value depends on besides the task: its resources, schedulability and verdicts."""
    s = ssn.state
    parts = [s.alloc[:, n].tobytes(), s.used[:, n].tobytes(), s.nominated[:, n].tobytes()]
    if future:
        parts.append(s.releasing[:, n].tobytes())
    flags = [bool(s.schedulable[n]), *(bool(r.mask[n]) for r in rejections)]
    parts.append(bytes(flags))
    return b"".join(parts)


def _values(ssn: Session, task: TaskInfo, future: bool, nodes: Indices | None) -> Scores:
    """The task's kept value on `nodes` (None: every node), as `Session.free`, `feasible` and `best_node` compute
    it, with only the leading local node-order plugins' scores."""
    s = ssn.state
    if nodes is None:
        nodes = np.arange(len(s.node_names))
        idle = s.alloc - s.used - s.nominated
        if future:
            idle = idle + s.releasing
        fit = s.schedulable.copy()
        for r in ssn.static_rejections(task):
            fit &= r.mask
    else:
        idle = s.alloc[:, nodes] - s.used[:, nodes] - s.nominated[:, nodes]
        if future:
            idle = idle + s.releasing[:, nodes]
        fit = s.schedulable[nodes]
        for r in ssn.static_rejections(task):
            fit &= r.mask[nodes]
    req = task.req
    for d in task.dims:
        fit &= idle[d] >= req[d]
    scores = ssn.node_scores(task, nodes, kept=True)
    values = np.full(len(nodes), -np.inf)
    if scores is None:
        values[fit] = 0.0
    else:
        np.copyto(values, scores, where=fit)
    return values
