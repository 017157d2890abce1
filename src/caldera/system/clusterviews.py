"""The embedded cluster's views for dashboards and other clients: overview, allocations, job table, timeline.

Each answer carries "resourceVersion": the store's version read before the view was made,
on the control loop (which alone writes the store, after it changed the plane), so the view
is at least as new as that version: a client that watches from it misses no later change.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from caldera.backends.sqlite_store import SqliteStore
from caldera.core.resources import PODS
from caldera.scheduler.shares import queue_shares
from caldera.system.api import JSON
from caldera.system.control import ControlPlane
from caldera.system.overview import RECENT_EVENTS, allocations, job_table, overview
from caldera.system.runtime import LocalRuntime
from caldera.system.timeline import KINDS, Timeline
from caldera.utils.clock import Clock

T = TypeVar("T")


class ClusterViews:
    def __init__(
        self,
        plane: ControlPlane,
        runtime: LocalRuntime,
        store: SqliteStore,
        clock: Clock,
        on_loop: Callable[[Callable[[], JSON]], JSON],
    ) -> None:
        self._plane = plane
        self._runtime = runtime
        self._store = store
        self._clock = clock
        self._on_loop = on_loop  # runs a read on the control loop and returns its answer
        self._timeline = Timeline()  # the events folded in so far: each answer reads only the newer ones
        self._timeline_lock = threading.Lock()

    def overview(self) -> JSON:
        def run() -> JSON:
            version = self._store.latest()
            plane = self._plane
            shares = queue_shares(plane.state, plane.scheduler.config)
            events = self._store.recent_events(RECENT_EVENTS)
            state = plane.state
            allocated = {r: v for r, v in state.as_dict(state.used.sum(axis=1)).items() if r != PODS}
            view = overview(plane.nodes, plane.pods, plane.jobs, plane.queues, shares, events, allocated)
            return {"resourceVersion": version, "time": self._clock.now(), **view}

        return self._on_loop(run)

    def allocations(self, node: str | None = None, pods_up_to: int | None = None) -> JSON:
        def run() -> JSON:
            version = self._store.latest()
            plane = self._plane
            gpus = self._runtime.gpus.holders()
            items = allocations(plane.nodes, plane.pods, gpus, self._allocated_on, node=node, pods_up_to=pods_up_to)
            return {"resourceVersion": version, "time": self._clock.now(), "items": items}

        return self._on_loop(run)

    def _allocated_on(self, node: str) -> dict[str, float]:
        """What the scheduler counts as allocated on `node`: its pods' requests, and the pods as PODS."""
        state = self._plane.state
        index = state.node_index.get(node)
        return {} if index is None else state.as_dict(state.used[:, index])

    def job_table(self) -> JSON:
        def run() -> JSON:
            version = self._store.latest()
            return {"resourceVersion": version, "time": self._clock.now(), "items": job_table(self._plane.jobs)}

        return self._on_loop(run)

    def timeline(self, namespace: str | None, job: str | None, since: float | None, until: float | None) -> JSON:
        """Read from the store on the caller's thread: the events of a pod change are written with it."""
        with self._timeline_lock:
            version = self._store.latest()
            self._timeline.add(self._store.events(since=self._timeline.last, kinds=KINDS))
            found = self._timeline.query(namespace=namespace, job=job, since=since, until=until)
        return {"resourceVersion": version, "time": self._clock.now(), **found}
