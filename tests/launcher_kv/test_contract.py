"""The `kv.KV` contract, run against MemoryKV and against a real etcd server: both must behave alike."""

from __future__ import annotations

import threading

import pytest

from caldera.launcher.kv import DELETE, PUT, KVError, LeaseNotFound, Unavailable
from caldera.testing.waiting import wait_until

from .harness import Recorder, Store, answering

# -- keys and values -----------------------------------------------------------------------------


def test_put_then_get_carries_revisions(store: Store):
    kv, p = store.kv, store.prefix
    before = kv.revision()
    first = kv.put(p + "a", "1")
    assert first > before
    got = kv.get(p + "a")
    assert got is not None
    assert (got.key, got.value, got.create_revision, got.mod_revision, got.lease) == (p + "a", "1", first, first, 0)
    second = kv.put(p + "a", "2")
    assert second > first
    got = kv.get(p + "a")
    assert got is not None
    assert (got.value, got.create_revision, got.mod_revision) == ("2", first, second)
    assert kv.revision() == second
    assert kv.get(p + "missing") is None


def test_get_prefix_is_sorted_by_key_and_stays_under_the_prefix(store: Store):
    kv, p = store.kv, store.prefix
    for key in ("nodes/c", "nodes/a", "nodes/b", "nodesX", "other/a"):
        kv.put(p + key, key.upper())
    found = kv.get_prefix(p + "nodes/")
    assert [(item.key, item.value) for item in found] == [
        (p + "nodes/a", "NODES/A"),
        (p + "nodes/b", "NODES/B"),
        (p + "nodes/c", "NODES/C"),
    ]
    assert kv.get_prefix(p + "empty/") == []


def test_values_are_unicode_strings(store: Store):
    kv, p = store.kv, store.prefix
    kv.put(p + "ключ", "значение ✓")
    got = kv.get(p + "ключ")
    assert got is not None and got.value == "значение ✓"


def test_create_writes_only_if_absent(store: Store):
    kv, p = store.kv, store.prefix
    assert kv.create(p + "leader", "node-1") is True
    assert kv.create(p + "leader", "node-2") is False
    got = kv.get(p + "leader")
    assert got is not None and got.value == "node-1"


def test_replace_is_compare_and_swap_on_the_mod_revision(store: Store):
    kv, p = store.kv, store.prefix
    assert kv.replace(p + "state", 0, "v1") is True  # 0: only if absent
    assert kv.replace(p + "state", 0, "again") is False
    seen = kv.get(p + "state")
    assert seen is not None
    assert kv.replace(p + "state", seen.mod_revision, "v2") is True
    assert kv.replace(p + "state", seen.mod_revision, "stale") is False  # someone (we) wrote since
    got = kv.get(p + "state")
    assert got is not None and got.value == "v2"
    assert got.create_revision == seen.create_revision


def test_delete_reports_whether_the_key_was_there(store: Store):
    kv, p = store.kv, store.prefix
    kv.put(p + "a", "1")
    assert kv.delete(p + "a") is True
    assert kv.get(p + "a") is None
    revision = kv.revision()
    assert kv.delete(p + "a") is False
    assert kv.revision() == revision  # deleting nothing writes nothing
    kv.put(p + "a", "new")
    got = kv.get(p + "a")
    assert got is not None and got.create_revision > revision  # a new life, a new create revision


def test_delete_prefix_deletes_the_range_in_one_revision(store: Store):
    kv, p = store.kv, store.prefix
    for key in ("job/a", "job/b", "job/c/d", "jobs", "keep"):
        kv.put(p + key, "x")
    revision = kv.revision()
    assert kv.delete_prefix(p + "job/") == 3
    assert kv.revision() == revision + 1
    assert [item.key for item in kv.get_prefix(p)] == [p + "jobs", p + "keep"]
    assert kv.delete_prefix(p + "job/") == 0


# -- leases --------------------------------------------------------------------------------------


def test_a_refreshed_lease_keeps_its_keys(store: Store):
    kv, p = store.kv, store.prefix
    lease = kv.grant(2)
    kv.put(p + "node", "alive", lease=lease)
    got = kv.get(p + "node")
    assert got is not None and got.lease == lease
    for _ in range(6):  # 3 s in all: longer than the TTL
        store.elapse(0.5)
        assert kv.refresh(lease) > 0
        assert kv.get(p + "node") is not None
    kv.revoke(lease)


def test_an_expired_lease_deletes_its_keys_and_is_never_silent(store: Store):
    kv, p = store.kv, store.prefix
    kv.put(p + "plain", "stays")
    lease = kv.grant(2)
    kv.put(p + "node", "alive", lease=lease)
    kv.put(p + "node2", "alive", lease=lease)
    store.wait_expired(p + "node", 2)
    assert kv.get(p + "node2") is None
    assert kv.get(p + "plain") is not None
    assert kv.refresh(lease) <= 0
    with pytest.raises(LeaseNotFound):
        kv.put(p + "node", "again", lease=lease)
    with pytest.raises(LeaseNotFound):
        kv.create(p + "fresh", "x", lease=lease)
    plain = kv.get(p + "plain")
    assert plain is not None
    with pytest.raises(LeaseNotFound):
        kv.replace(p + "plain", plain.mod_revision, "x", lease=lease)
    # a transaction whose comparison fails writes nothing, so its lease is not looked at
    assert kv.create(p + "plain", "x", lease=lease) is False
    assert kv.get(p + "fresh") is None


def test_revoke_deletes_the_keys_now_and_twice_is_fine(store: Store):
    kv, p = store.kv, store.prefix
    lease = kv.grant(30)
    kv.put(p + "a", "1", lease=lease)
    kv.put(p + "b", "2", lease=lease)
    revision = kv.revision()
    kv.revoke(lease)
    assert kv.get_prefix(p) == []
    assert kv.revision() == revision + 1  # one revision for all the lease's keys
    kv.revoke(lease)
    assert kv.refresh(lease) <= 0


def test_a_lease_that_never_existed_is_not_found(store: Store):
    kv, p = store.kv, store.prefix
    with pytest.raises(LeaseNotFound):
        kv.put(p + "a", "1", lease=0x1234_5678)
    assert kv.refresh(0x1234_5678) <= 0


def test_rewriting_a_key_without_its_lease_detaches_it(store: Store):
    kv, p = store.kv, store.prefix
    lease = kv.grant(30)
    kv.put(p + "a", "1", lease=lease)
    kv.put(p + "a", "2")
    kv.revoke(lease)
    got = kv.get(p + "a")
    assert got is not None and (got.value, got.lease) == ("2", 0)


# -- watches -------------------------------------------------------------------------------------


def test_watch_delivers_puts_and_deletes_under_the_prefix_in_order(store: Store):
    kv, p = store.kv, store.prefix
    seen = Recorder()
    cancel = kv.watch_prefix(p + "nodes/", seen)
    try:
        first = kv.put(p + "nodes/a", "1")
        kv.put(p + "other", "ignored")
        kv.put(p + "nodes/b", "2")
        kv.delete(p + "nodes/a")
        last = kv.put(p + "nodes/b", "3")
        events = seen.wait_events(4)
        assert seen.seen() == [
            (PUT, p + "nodes/a", "1"),
            (PUT, p + "nodes/b", "2"),
            (DELETE, p + "nodes/a", ""),
            (PUT, p + "nodes/b", "3"),
        ]
        revisions = [e.revision for e in events]
        assert revisions == sorted(revisions) and revisions[0] == first and revisions[-1] == last
        assert seen.errors == []
    finally:
        cancel()


def test_watch_reports_every_key_a_range_delete_or_a_lease_expiry_removed(store: Store):
    kv, p = store.kv, store.prefix
    seen = Recorder()
    lease = kv.grant(30)
    kv.put(p + "b", "1", lease=lease)
    kv.put(p + "a", "2", lease=lease)
    kv.put(p + "c", "3")
    cancel = kv.watch_prefix(p, seen)
    try:
        kv.revoke(lease)
        kv.delete_prefix(p)
        events = seen.wait_events(3)
        assert seen.seen() == [(DELETE, p + "a", ""), (DELETE, p + "b", ""), (DELETE, p + "c", "")]
        assert events[0].revision == events[1].revision < events[2].revision
    finally:
        cancel()


def test_watch_from_a_start_revision_replays_what_happened_since(store: Store):
    kv, p = store.kv, store.prefix
    kv.put(p + "a", "old")
    start = kv.put(p + "a", "1")
    kv.put(p + "b", "2")
    seen = Recorder()
    cancel = kv.watch_prefix(p, seen, start_revision=start)
    try:
        kv.delete(p + "a")
        events = seen.wait_events(3)
        assert seen.seen() == [(PUT, p + "a", "1"), (PUT, p + "b", "2"), (DELETE, p + "a", "")]
        assert events[0].revision == start
    finally:
        cancel()


def test_watch_from_the_revision_after_a_read_misses_nothing(store: Store):
    kv, p = store.kv, store.prefix
    kv.put(p + "a", "1")
    revision = kv.revision()
    kv.put(p + "b", "2")  # written between the read and the watch
    seen = Recorder()
    cancel = kv.watch_prefix(p, seen, start_revision=revision + 1)
    try:
        assert seen.wait_events(1) and seen.seen() == [(PUT, p + "b", "2")]
    finally:
        cancel()


def test_cancel_stops_a_watch(store: Store):
    kv, p = store.kv, store.prefix
    stopped, sentinel = Recorder(), Recorder()
    cancel = kv.watch_prefix(p, stopped)
    kv.put(p + "a", "1")
    stopped.wait_events(1)
    cancel()
    cancel()  # idempotent
    cancel_sentinel = kv.watch_prefix(p, sentinel)
    try:
        kv.put(p + "b", "2")
        sentinel.wait_events(1)  # the change reached watchers: had the first still watched, it would have it
        assert stopped.seen() == [(PUT, p + "a", "1")]
    finally:
        cancel_sentinel()


def test_callbacks_run_on_another_thread_and_may_use_the_store(store: Store):
    kv, p = store.kv, store.prefix
    seen = Recorder()

    def mirror(event):
        seen(event)
        if event.key == p + "in":
            kv.put(p + "out", event.value)  # a callback that writes must not deadlock

    cancel = kv.watch_prefix(p, mirror)
    try:
        kv.put(p + "in", "x")
        seen.wait_events(2)
        assert seen.seen() == [(PUT, p + "in", "x"), (PUT, p + "out", "x")]
        assert threading.get_ident() not in seen.threads
    finally:
        cancel()


# -- the server out of reach ---------------------------------------------------------------------


def test_losing_the_server_raises_unavailable_and_breaks_watches_once(store: Store):
    p = store.prefix
    with store.outage() as outage:
        kv = outage.kv
        kv.put(p + "a", "1")
        seen = Recorder()
        kv.watch_prefix(p, seen, on_error=seen.on_error)

        outage.cut()
        errors = seen.wait_errors(1)
        assert isinstance(errors[0], Unavailable)
        with pytest.raises(Unavailable):
            kv.get(p + "a")
        with pytest.raises(Unavailable):
            kv.put(p + "b", "2")
        with pytest.raises(Unavailable):
            kv.watch_prefix(p, seen)

        outage.restore()

        wait_until(
            answering(lambda: kv.get(p + "a") is not None), timeout=15, what="the client to reach the server again"
        )
        again = Recorder()
        cancel = kv.watch_prefix(p, again, on_error=again.on_error)
        kv.put(p + "b", "2")
        assert again.wait_events(1) and again.seen() == [(PUT, p + "b", "2")]
        cancel()
        assert len(seen.errors) == 1  # once, and nothing delivered after it
        assert seen.events == []


def test_a_closed_client_refuses_calls(store: Store):
    store.kv.close()
    with pytest.raises(KVError):
        store.kv.get(store.prefix + "a")
    store.kv.close()  # idempotent
