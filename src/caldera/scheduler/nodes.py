"""Nodes as a structure of arrays: one row per resource, one column per node.

Fitting and scoring a task against every node is then a few vector operations.
`alloc` is what each node offers; `used`, `releasing` and `nominated` are kept by
the cluster state (`state.py`) from the tasks on each node. A node that goes away
stays as an unschedulable column, so node indices never move.

Versions: `node_version` is bumped when a node is added or changes (labels,
taints, schedulability, allocatable); `used_version[d]` whenever some node's
`used` of resource `d` changes; `version` whenever capacity may have grown
(the cluster state bumps it too). Caches of what derives from the nodes key on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from caldera.core import objects as o
from caldera.core.resources import PODS
from caldera.scheduler.info import UNTRACKED_UNLESS_DECLARED, Vector

CHANGE_LOG = 1 << 16  # entries kept in the change log before it starts again


class NodeArrays:
    """The nodes' resources, labels and taints, column by column."""

    def __init__(self, resources: Iterable[str] = ()) -> None:
        names = [PODS, *sorted({r for r in resources if r != PODS})]
        self.resources: list[str] = names
        self.dim: dict[str, int] = {r: i for i, r in enumerate(names)}
        r = len(names)
        self.node_names: list[str] = []
        self.node_index: dict[str, int] = {}
        self.node_labels: list[Mapping[str, str]] = []
        self.node_taints: list[tuple[o.Taint, ...]] = []
        self.alloc: Vector = np.zeros((r, 0))
        self.used: Vector = np.zeros((r, 0))
        self.used_version: list[int] = [0] * r  # per resource: bumped whenever some node's `used` of it changes
        self.releasing: Vector = np.zeros((r, 0))
        self.nominated: Vector = np.zeros((r, 0))
        self.schedulable: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        # Bumped when capacity may have grown (a task left a node, a node or queue
        # changed) or a time-driven order changed (las): a job that failed at the
        # current version is not retried.
        self.version = 0
        # Bumped when nodes' labels, taints or schedulability change: predicate masks cache on it.
        self.node_version = 0
        self._total: Vector | None = None
        self._total_version = -1
        # The columns whose `used`, `releasing` or `nominated` changed, in order (what `placement.py` catches
        # up with); position p of the log is `_changed[p - _changed_base]`. Long, it starts again.
        self._changed: list[int] = []
        self._changed_base = 0

    # ------------------------------------------------------------ vectors

    def vector(self, res: Mapping[str, float]) -> tuple[Vector, str]:
        """`res` as a vector over this state's dimensions, and the first resource it has no dimension for.

        Like Volcano, local storage is only accounted when some node declares it."""
        v = np.zeros(len(self.resources))
        unknown = ""
        for name, amount in res.items():
            if amount <= 0:
                continue
            d = self.dim.get(name)
            if d is None and name in UNTRACKED_UNLESS_DECLARED:
                continue
            if d is None:
                unknown = unknown or name
            else:
                v[d] = amount
        return v, unknown

    def as_dict(self, v: Vector) -> dict[str, float]:
        return {r: float(v[i]) for i, r in enumerate(self.resources) if v[i]}

    @property
    def total(self) -> Vector:
        """Allocatable resources of the schedulable nodes (cached until a node changes)."""
        if self._total is None or self._total_version != self.node_version or len(self._total) != len(self.resources):
            self._total = (
                self.alloc[:, self.schedulable].sum(axis=1) if self.alloc.shape[1] else np.zeros(len(self.resources))
            )
            self._total_version = self.node_version
        return self._total

    # ------------------------------------------------------------ the change log

    def note_change(self, n: int) -> None:
        """Column `n`'s used, releasing or nominated resources changed (the state calls this)."""
        changed = self._changed
        if len(changed) >= CHANGE_LOG:
            self._changed_base += len(changed)
            changed.clear()
        changed.append(n)

    @property
    def change_position(self) -> int:
        return self._changed_base + len(self._changed)

    def changes_since(self, position: int, limit: int) -> list[int] | None:
        """The columns changed since `position` (with repeats); None if the log no longer reaches back
        that far or they are more than `limit`: then recompute every column."""
        start = position - self._changed_base
        if start < 0 or len(self._changed) - start > limit:
            return None
        return self._changed[start:]

    # ------------------------------------------------------------ nodes

    def set_node(self, node: o.Node) -> None:
        vec = np.zeros(len(self.resources))
        for name, amount in node.allocatable.items():
            if name not in self.dim:
                self._add_dimension(name)
                vec = np.append(vec, 0.0)
            vec[self.dim[name]] = amount
        if PODS not in node.allocatable:
            vec[self.dim[PODS]] = 110.0  # the kubelet's default
        n = self.node_index.get(node.name)
        if n is None:
            n = len(self.node_names)
            self.node_names.append(node.name)
            self.node_index[node.name] = n
            self.node_labels.append(dict(node.labels))
            self.node_taints.append(tuple(node.taints))
            zeros = np.zeros((len(self.resources), 1))
            self.alloc = np.hstack([self.alloc, vec[:, None]])
            self.used = np.hstack([self.used, zeros])
            self.releasing = np.hstack([self.releasing, zeros])
            self.nominated = np.hstack([self.nominated, zeros])
            self.schedulable = np.append(self.schedulable, True)
        else:
            self.node_labels[n] = dict(node.labels)
            self.node_taints[n] = tuple(node.taints)
            self.alloc[:, n] = vec
        self.schedulable[n] = node.ready and not node.unschedulable
        self.version += 1
        self.node_version += 1

    def set_nodes(self, nodes: Iterable[o.Node]) -> None:
        """Add many nodes at once (building column by column is quadratic)."""
        nodes = list(nodes)
        for node in nodes:
            for name in node.allocatable:
                if name not in self.dim:
                    self._add_dimension(name)
        fresh = [nd for nd in nodes if nd.name not in self.node_index]
        for nd in nodes:
            if nd.name in self.node_index:
                self.set_node(nd)
        if not fresh:
            return
        r, start = len(self.resources), len(self.node_names)
        block = np.zeros((r, len(fresh)))
        block[self.dim[PODS], :] = 110.0
        for j, nd in enumerate(fresh):
            for name, amount in nd.allocatable.items():
                block[self.dim[name], j] = amount
            self.node_names.append(nd.name)
            self.node_index[nd.name] = start + j
            self.node_labels.append(dict(nd.labels))
            self.node_taints.append(tuple(nd.taints))
        zeros = np.zeros((r, len(fresh)))
        self.alloc = np.hstack([self.alloc, block])
        self.used = np.hstack([self.used, zeros])
        self.releasing = np.hstack([self.releasing, zeros])
        self.nominated = np.hstack([self.nominated, zeros.copy()])
        self.schedulable = np.append(self.schedulable, [nd.ready and not nd.unschedulable for nd in fresh])
        self.version += 1
        self.node_version += 1

    def remove_node(self, name: str) -> None:
        """The node is gone: it stays as an unschedulable column (tasks on it are removed by the caller)."""
        n = self.node_index.get(name)
        if n is None:
            return
        self.schedulable[n] = False
        self.alloc[:, n] = 0.0
        self.node_version += 1
        self.version += 1

    def _add_dimension(self, name: str) -> None:
        """A resource no node had until now: a row of zeros."""
        self.dim[name] = len(self.resources)
        self.resources.append(name)
        n = len(self.node_names)
        for attr in ("alloc", "used", "releasing", "nominated"):
            setattr(self, attr, np.vstack([getattr(self, attr), np.zeros((1, n))]))
        self.used_version.append(0)
