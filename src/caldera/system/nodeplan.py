"""The embedded cluster's nodes as the daemon keeps them: their shape and the labels and taints people set.

The shape (`--nodes`, `--cpus-per-node`, ...) is stored as the Config `nodes`: with no flags, a
start takes the last start's. The labels and taints are stored apart as the Config
`node-overrides` (`nodeconfig.py`) and laid over the planned nodes. Invariant: what is stored
is what the nodes are; a patch is stored before it is applied, so a store that cannot be
written changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from caldera.backends.sqlite_store import SqliteStore
from caldera.core import objects as o
from caldera.system import machine, nodeconfig
from caldera.system.api import JSON, NotFound

NODES = "nodes"  # the store's Config of the nodes' shape
NODE_OVERRIDES = "node-overrides"  # the store's Config of the labels and taints set on nodes (`nodeconfig`)


class NodePlan:
    def __init__(
        self,
        store: SqliteStore,
        nodes: int | None,
        cpus: str | None,
        memory: str | None,
        gpus: int | None,
        labels: Sequence[str],
        taints: Sequence[str],
    ) -> None:
        self._store = store
        planned = self._plan(nodes, cpus, memory, gpus)
        self.planned = {n.name: n for n in planned}  # the nodes before the labels and taints people set
        saved = store.get("Config", "", NODE_OVERRIDES)
        self.overrides = nodeconfig.with_flags(
            saved.body["spec"] if saved is not None else nodeconfig.empty(), planned, labels, taints
        )
        self._save(self.overrides)

    def nodes(self) -> list[o.Node]:
        return nodeconfig.apply(list(self.planned.values()), self.overrides)

    def patch(
        self, name: str, labels: Mapping[str, str | None] | None = None, taints: list[JSON] | None = None
    ) -> o.Node:
        """Node `name` with these labels and taints set, stored first (NotFound for an unknown node)."""
        if name not in self.planned:
            raise NotFound(f"node {name} not found (nodes: {', '.join(self.planned)})")
        overrides = nodeconfig.patch(self.planned[name], self.overrides, labels, taints)
        self._save(overrides)  # first: a store that cannot be written changes nothing
        self.overrides = overrides
        (node,) = nodeconfig.apply([self.planned[name]], self.overrides)
        return node

    def _plan(self, nodes: int | None, cpus: str | None, memory: str | None, gpus: int | None) -> list[o.Node]:
        """The nodes as asked; with no flags, the ones of the last start (or this machine as one node)."""
        stored = self._store.get("Config", "", NODES)
        if nodes is None and cpus is None and memory is None and gpus is None and stored is not None:
            spec = stored.body["spec"]
            nodes, cpus, memory, gpus = spec["nodes"], spec["cpus"], spec["memory"], spec["gpus"]
        planned = machine.plan_nodes(machine.detect(), nodes, cpus, memory, gpus)
        spec = {"nodes": nodes, "cpus": cpus, "memory": memory, "gpus": gpus}
        self._store.put("Config", "", NODES, {"metadata": {"name": NODES}, "spec": spec})
        return planned

    def _save(self, overrides: nodeconfig.Overrides) -> None:
        self._store.put("Config", "", NODE_OVERRIDES, {"metadata": {"name": NODE_OVERRIDES}, "spec": overrides})
