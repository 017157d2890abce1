import json
import threading
from pathlib import Path

import pytest

from caldera.backends.sqlite_store import ADDED, DELETED, MODIFIED, Conflict, SqliteStore, Unavailable


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "state.db")


def job(name: str, replicas: int = 1) -> dict[str, object]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"r": replicas},
    }


def test_create_get_list_stamp_resource_version(store: SqliteStore) -> None:
    rv1 = store.put("Job", "default", "a", job("a"), expect=0)
    rv2 = store.put("Job", "default", "b", job("b"), expect=0)
    assert rv2 > rv1
    got = store.get("Job", "default", "a")
    assert got is not None and got.rv == rv1 and got.body["metadata"]["resourceVersion"] == str(rv1)
    assert [s.name for s in store.list("Job")] == ["a", "b"]
    assert store.list("Job", "other") == []


def test_optimistic_concurrency(store: SqliteStore) -> None:
    rv = store.put("Job", "default", "a", job("a"), expect=0)
    with pytest.raises(Conflict, match="already exists"):
        store.put("Job", "default", "a", job("a"), expect=0)
    rv2 = store.put("Job", "default", "a", job("a", 2), expect=rv)
    with pytest.raises(Conflict, match="was modified"):
        store.put("Job", "default", "a", job("a", 3), expect=rv)  # a stale writer loses
    got = store.get("Job", "default", "a")
    assert got is not None and got.body["spec"]["r"] == 2 and got.rv == rv2
    with pytest.raises(Conflict):
        store.delete("Job", "default", "a", expect=rv)
    assert store.delete("Job", "default", "a", expect=rv2)
    assert store.get("Job", "default", "a") is None
    assert not store.delete("Job", "default", "a")


def test_changes_are_a_watch_in_order(store: SqliteStore) -> None:
    start = store.latest()
    store.put("Job", "default", "a", job("a"))
    store.put("Job", "default", "a", job("a", 2))
    store.put("Pod", "default", "a-worker-0", {"metadata": {"name": "a-worker-0"}})
    store.delete("Job", "default", "a")
    changes = store.changes(start)
    assert [(c.kind, c.type) for c in changes] == [("Job", ADDED), ("Job", MODIFIED), ("Pod", ADDED), ("Job", DELETED)]
    assert [c.rv for c in changes] == sorted(c.rv for c in changes)
    assert [c.type for c in store.changes(start, kind="Job")] == [ADDED, MODIFIED, DELETED]
    assert store.changes(changes[-1].rv) == []


def test_transaction_rolls_back_as_a_whole(store: SqliteStore) -> None:
    with pytest.raises(Conflict), store.transaction():
        store.put("Job", "default", "a", job("a"), expect=0)
        store.put("Job", "default", "a", job("a"), expect=0)
    assert store.get("Job", "default", "a") is None


def test_state_survives_reopening(tmp_path: Path) -> None:
    first = SqliteStore(tmp_path / "state.db")
    rv = first.put("Queue", "", "research", {"metadata": {"name": "research"}, "spec": {"weight": 2}})
    first.add_event(1.0, "default", "JobPhase", "a", "", "Running", "4 pods started")
    first.close()
    second = SqliteStore(tmp_path / "state.db")
    got = second.get("Queue", "", "research")
    assert got is not None and got.rv == rv and got.body["spec"]["weight"] == 2
    assert second.latest() == rv
    assert [e["reason"] for e in second.events("default", ("a",))] == ["Running"]


def test_concurrent_writers_never_lose_an_update(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.db")
    store.put("Counter", "", "c", {"n": 0})

    def bump(times: int) -> None:
        done = 0
        while done < times:
            cur = store.get("Counter", "", "c")
            assert cur is not None
            try:
                store.put("Counter", "", "c", {"n": cur.body["n"] + 1}, expect=cur.rv)
                done += 1
            except Conflict:
                continue  # someone else won: read again

    threads = [threading.Thread(target=bump, args=(25,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = store.get("Counter", "", "c")
    assert final is not None and final.body["n"] == 100


def test_a_full_file_refuses_the_whole_transaction_and_the_store_works_on_once_it_has_room(store: SqliteStore) -> None:
    """SQLite's own full (its page limit: a full disk without one): nothing of the transaction stays,
    no transaction is left open, and with room again the same write succeeds."""
    store.put("Job", "default", "a", job("a"), expect=0)
    before = store.latest()
    db = store._db()
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")
    big = [("Job", "default", f"big-{i}", json.dumps({**job(f"big-{i}"), "pad": "x" * 100_000})) for i in range(20)]
    with pytest.raises(Unavailable, match="full"), store.transaction():
        store.write(big[:1], [])
        store.write(big[1:], [])
    assert not db.in_transaction
    assert store.latest() == before and [s.name for s in store.list("Job")] == ["a"]
    db.execute("PRAGMA max_page_count = 1073741823")
    store.write(big, [])
    assert len(store.list("Job")) == 21
