"""The change feed over a real store: snapshot and changes agree, and the log stays bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from caldera.backends.sqlite_store import SqliteStore
from caldera.system.api import Expired
from caldera.system.watch import ChangeFeed


def queue(name: str) -> dict[str, object]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": {}}


def test_a_snapshot_then_the_changes_after_it(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.db")
    feed = ChangeFeed(store)
    store.put("Queue", "", "a", queue("a"))
    store.put("Job", "default", "j", {"metadata": {"name": "j"}})
    feed.published()
    snap = feed.changes(("Queue",))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in snap["events"]] == [("ADDED", "a")]
    store.put("Queue", "", "b", queue("b"))
    store.delete("Queue", "", "a")
    store.put("Job", "default", "j", {"metadata": {"name": "j"}})  # another kind: looked at, not sent
    feed.published()
    after = feed.changes(("Queue",), since=snap["resourceVersion"], timeout=5)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in after["events"]] == [
        ("ADDED", "b"),
        ("DELETED", "a"),
    ]
    assert after["resourceVersion"] == store.latest()
    assert feed.changes(("Queue",), since=after["resourceVersion"], timeout=0)["events"] == []
    store.close()


def test_the_log_is_compacted_and_a_watcher_too_far_behind_is_told(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.db")
    feed = ChangeFeed(store, keep=5)
    for i in range(20):
        store.put("Queue", "", f"q{i}", queue(f"q{i}"))
        feed.published()
    assert len(store.changes(0)) <= 10
    with pytest.raises(Expired, match="too old"):
        feed.changes(("Queue",), since=1)
    latest = store.latest()
    assert feed.changes(("Queue",), since=latest - 2)["resourceVersion"] == latest
    store.close()
