"""Watching the embedded cluster: the store's change log as Kubernetes watch events.

Every write the control loop makes goes to the store with the next resourceVersion
and into its change log; the loop calls `published()` after each write, which wakes
the watchers. A watch starts either from the current state (every object as ADDED,
read in one transaction with the version it is at, so nothing is missed or doubled
when the changes after that version follow) or from a version a client saw.

Invariant: a batch's "resourceVersion" is the last change it looked at (sent or
filtered out), so a client that continues from it sees each later change exactly once.
The log keeps the last KEEP changes (compacted every COMPACT_EVERY writes): a watcher
further behind gets Expired and lists again, as with Kubernetes' 410 Gone.
"""

from __future__ import annotations

import threading
from typing import Any

from caldera.backends.sqlite_store import ADDED, DELETED, Change, SqliteStore
from caldera.core.errors import FieldError, ValidationError
from caldera.system.api import JSON, WATCH_KINDS, Expired

BATCH = 1000  # changes read from the log per call
KEEP = 10_000
COMPACT_EVERY = 1_000


class ChangeFeed:
    """The store's change log for watchers, on any thread."""

    def __init__(self, store: SqliteStore, keep: int = KEEP) -> None:
        self._store = store
        self._keep = keep
        self._cond = threading.Condition()
        self._latest = store.latest()
        self._compacted = 0  # the version at the last compaction (0: none yet in this process)

    def published(self) -> None:
        """The loop wrote to the store: wake whoever waits for a change (and keep the log bounded)."""
        latest = self._store.latest()
        if latest - self._compacted >= min(COMPACT_EVERY, self._keep):
            self._store.compact(self._keep)
            self._compacted = latest
        with self._cond:
            self._latest = latest
            self._cond.notify_all()

    def changes(
        self, kinds: tuple[str, ...], namespace: str | None = None, since: int | None = None, timeout: float = 0.0
    ) -> JSON:
        """See `ClusterAPI.changes`."""
        wanted = _kinds(kinds)
        if since is None:
            return self._snapshot(wanted, namespace)
        if since < 0:
            raise ValidationError([FieldError("resourceVersion", "must be a version (a number ≥ 0)")], "watch")
        with self._cond:
            self._cond.wait_for(lambda: self._latest > since, timeout=max(0.0, timeout))
        rows = self._store.changes(since, None, BATCH)
        if rows and rows[0].rv > since + 1:
            raise Expired(f"resourceVersion {since} is too old: the change log starts at {rows[0].rv}")
        events = [_event(c) for c in rows if c.kind in wanted and namespace in (None, c.namespace)]
        return {"resourceVersion": rows[-1].rv if rows else since, "events": events}

    def _snapshot(self, kinds: frozenset[str], namespace: str | None) -> JSON:
        # One transaction: the objects and the version are of the same moment.
        with self._store.transaction():
            latest = self._store.latest()
            stored = [s for kind in sorted(kinds) for s in self._store.list(kind, namespace)]
        events = [{"type": ADDED, "object": _with_kind(s.kind, s.body)} for s in sorted(stored, key=lambda s: s.rv)]
        return {"resourceVersion": latest, "events": events}


def node_object(summary: JSON) -> JSON:
    """A node as stored for watchers: its summary (as `list_nodes` gives it) in the Kubernetes shape."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": summary["name"]}, **summary}


def _kinds(kinds: tuple[str, ...]) -> frozenset[str]:
    unknown = [k for k in kinds if k not in WATCH_KINDS]
    if unknown:
        rule = f"{', '.join(unknown)}: not a kind that can be watched ({', '.join(WATCH_KINDS)})"
        raise ValidationError([FieldError("kind", rule)], "watch")
    return frozenset(kinds or WATCH_KINDS)


def _event(c: Change) -> JSON:
    if c.type == DELETED or c.body is None:
        meta = {"name": c.name, "namespace": c.namespace, "resourceVersion": str(c.rv)}
        return {"type": DELETED, "object": {"kind": c.kind, "metadata": meta}}
    return {"type": c.type, "object": _with_kind(c.kind, c.body)}


def _with_kind(kind: str, body: dict[str, Any]) -> JSON:
    return body if body.get("kind") == kind else {**body, "kind": kind}
