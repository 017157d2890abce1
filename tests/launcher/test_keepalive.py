"""The keep-alive never dies and never stays silent: expired and stale leases are reported."""

from __future__ import annotations

import threading

import pytest

from caldera.launcher.keepalive import KeepAlive, LeaseState
from caldera.launcher.memkv import MemoryKV
from caldera.testing.waiting import wait_until
from caldera.utils.clock import ManualClock


@pytest.fixture
def clock():
    return ManualClock(0.0)


@pytest.fixture
def kv(clock):
    store = MemoryKV(clock)
    yield store
    store.close()


class Reports:
    def __init__(self):
        self.items: list[tuple[LeaseState, int, str]] = []
        self.changed = threading.Condition()

    def __call__(self, state, lease, message):
        with self.changed:
            self.items.append((state, lease, message))
            self.changed.notify_all()

    def states(self):
        return [s for s, _, _ in self.items]


def test_refreshing_keeps_the_lease_and_its_keys(kv, clock):
    reports = Reports()
    keeper = KeepAlive(kv, ttl=5, clock=clock, report=reports)
    lease = kv.grant(5)
    kv.put("/k", "v", lease)
    keeper.use(lease)
    for _ in range(20):  # 20 s of virtual time, a beat every TTL/5
        assert keeper.beat() == pytest.approx(1.0)
        clock.advance(1.0)
    assert kv.get("/k") is not None and reports.items == []


def test_an_expired_lease_is_reported_once_and_not_refreshed_again(kv, clock):
    reports = Reports()
    keeper = KeepAlive(kv, ttl=2, clock=clock, report=reports)
    lease = kv.grant(2)
    keeper.use(lease)
    clock.advance(3)  # e.g. the process was stopped (SIGSTOP) longer than the TTL
    keeper.beat()
    keeper.beat()
    assert reports.states() == [LeaseState.EXPIRED]
    assert reports.items[0][1] == lease and "expired" in reports.items[0][2]


def test_a_revoked_lease_is_reported_as_expired(kv, clock):
    reports = Reports()
    keeper = KeepAlive(kv, ttl=5, clock=clock, report=reports)
    lease = kv.grant(5)
    keeper.use(lease)
    kv.revoke(lease)  # what `remove_pod` does
    keeper.beat()
    assert reports.states() == [LeaseState.EXPIRED]


def test_unreachable_for_a_ttl_is_stale_then_restored(kv, clock):
    reports = Reports()
    keeper = KeepAlive(kv, ttl=5, clock=clock, report=reports)
    lease = kv.grant(5)
    keeper.use(lease)
    kv.set_reachable(False)
    delays = []
    for _ in range(4):
        delays.append(keeper.beat())
        clock.advance(1.0)
    assert reports.items == []  # 4 s without a refresh: not yet a TTL
    assert delays == sorted(delays) and delays[0] < 1.0  # retries back off, from quick to the interval
    clock.advance(1.0)
    keeper.beat()
    keeper.beat()
    assert reports.states() == [LeaseState.STALE]
    kv.set_reachable(True)
    keeper.beat()  # 5 s without a refresh: the server let the lease expire meanwhile
    assert reports.states() == [LeaseState.STALE, LeaseState.EXPIRED]


def test_a_short_outage_is_restored_without_alarm(kv, clock):
    reports = Reports()
    keeper = KeepAlive(kv, ttl=5, clock=clock, report=reports)
    lease = kv.grant(5)
    keeper.use(lease)
    kv.set_reachable(False)
    keeper.beat()
    clock.advance(2.0)
    keeper.beat()
    kv.set_reachable(True)
    keeper.beat()
    assert reports.states() == [LeaseState.RESTORED]


class Broken:
    """A store whose refresh raises something that is not a KVError (a client bug)."""

    def __init__(self):
        self.calls = 0

    def refresh(self, lease):
        self.calls += 1
        raise RuntimeError("boom")


def test_the_thread_survives_unexpected_errors_and_stops_on_request(clock):
    store = Broken()
    reports = Reports()
    keeper = KeepAlive(store, ttl=1, clock=clock, report=reports)  # type: ignore[arg-type]
    keeper.use(42)
    keeper.start()
    try:
        wait_until(lambda: store.calls >= 5, timeout=10, what="the keep-alive to retry after errors")
        clock.advance(1.0)
        wait_until(lambda: LeaseState.STALE in reports.states(), timeout=10, what="a stale report")
        calls = store.calls
        wait_until(lambda: store.calls > calls, timeout=10, what="retries to go on after the report")
    finally:
        keeper.stop()
