"""What MemoryKV adds to the contract: time from a manual clock, deterministic delivery, faults on demand."""

from __future__ import annotations

import threading

import pytest

from caldera.launcher.kv import DELETE, PUT, KVError, Unavailable
from caldera.launcher.memkv import MemoryKV
from caldera.utils.clock import ManualClock

from .harness import Recorder


@pytest.fixture
def clock():
    return ManualClock(100.0)


@pytest.fixture
def kv(clock):
    store = MemoryKV(clock)
    yield store
    store.close()


def test_revisions_start_where_a_fresh_etcd_starts(kv):
    assert kv.revision() == 1
    assert kv.put("/a", "1") == 2


def test_a_lease_ends_exactly_when_its_ttl_has_passed_on_the_clock(kv, clock):
    lease = kv.grant(10)
    kv.put("/node", "x", lease=lease)
    clock.advance(9.5)
    assert kv.ttl(lease) == 0  # less than a whole second left
    assert kv.get("/node") is not None
    clock.advance(0.5)
    assert kv.get("/node") is None  # expiry is checked by every call
    assert kv.ttl(lease) == -1
    assert kv.refresh(lease) == 0


def test_expiry_waits_for_a_call_or_expire_so_a_test_picks_the_moment(kv, clock):
    seen = Recorder()
    lease = kv.grant(5)
    kv.put("/n/a", "x", lease=lease)
    kv.watch_prefix("/n/", seen)
    clock.advance(60)
    kv.flush()
    assert seen.events == []  # nothing runs behind the test's back
    assert kv.expire() == 1
    assert kv.expire() == 0
    kv.flush()
    assert seen.seen() == [(DELETE, "/n/a", "")]


def test_flush_delivers_everything_queued_so_far(kv):
    seen = Recorder()
    kv.watch_prefix("/", seen)
    for i in range(100):
        kv.put(f"/k{i:03}", str(i))
    kv.flush()
    assert [e.value for e in seen.events] == [str(i) for i in range(100)]


def test_flush_reraises_what_a_callback_raised_and_the_watch_goes_on(kv):
    seen = Recorder()

    def fussy(event):
        if event.value == "bad":
            raise RuntimeError("callback bug")
        seen(event)

    kv.watch_prefix("/", fussy)
    kv.put("/a", "bad")
    kv.put("/b", "good")
    with pytest.raises(RuntimeError, match="callback bug"):
        kv.flush()
    kv.flush()  # reported once
    assert seen.seen() == [(PUT, "/b", "good")]


def test_unreachable_store_fails_calls_and_breaks_watches_until_reachable(kv):
    seen = Recorder()
    kv.watch_prefix("/", seen, on_error=seen.on_error)
    kv.set_reachable(False)
    with pytest.raises(Unavailable):
        kv.put("/a", "1")
    with pytest.raises(Unavailable):
        kv.grant(5)
    kv.set_reachable(False)  # already down: no second error
    kv.set_reachable(True)
    kv.put("/a", "1")
    kv.flush()
    assert len(seen.errors) == 1 and isinstance(seen.errors[0], Unavailable)
    assert seen.events == []  # a broken watch stays broken: the caller watches anew


def test_leases_keep_ageing_while_the_store_is_unreachable(kv, clock):
    lease = kv.grant(5)
    kv.put("/a", "1", lease=lease)
    kv.set_reachable(False)
    clock.advance(6)
    kv.set_reachable(True)
    assert kv.refresh(lease) == 0
    assert kv.get("/a") is None


def test_concurrent_writers_get_distinct_revisions_and_watchers_see_them_in_order(kv):
    seen = Recorder()
    kv.watch_prefix("/", seen)
    revisions: list[int] = []
    lock = threading.Lock()

    def writer(name: str) -> None:
        for i in range(200):
            revision = kv.put(f"/{name}/{i}", name)
            with lock:
                revisions.append(revision)

    threads = [threading.Thread(target=writer, args=(f"w{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    kv.flush()
    assert sorted(revisions) == list(range(2, 802))
    assert [e.revision for e in seen.events] == list(range(2, 802))


def test_grant_needs_a_positive_ttl(kv):
    with pytest.raises(ValueError, match="at least 1 second"):
        kv.grant(0)


def test_close_ends_the_delivery_thread(clock):
    store = MemoryKV(clock)
    seen = Recorder()
    store.watch_prefix("/", seen)
    store.put("/a", "1")
    store.flush()
    delivery = [t for t in threading.enumerate() if t.name == "memkv-watch"]
    store.close()
    for thread in delivery:
        thread.join(5)
    assert not any(t.is_alive() for t in delivery)
    with pytest.raises(KVError, match="closed"):
        store.put("/b", "2")
