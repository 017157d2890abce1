"""One contract, two stores: what differs between MemoryKV and a real etcd server, behind one shape.

A `Store` gives a test its client (`kv`), a key prefix of its own (so tests sharing one etcd
server never see each other's keys), a way to let time pass (the manual clock for MemoryKV;
real time for etcd, which has no other clock) and a client it may cut off from the server.
"""

from __future__ import annotations

import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

from caldera.launcher.etcd import EtcdKV, connect
from caldera.launcher.kv import KV, KVError, Unavailable, WatchEvent
from caldera.launcher.memkv import MemoryKV
from caldera.launcher.server import EtcdServer
from caldera.testing.tcpproxy import TcpProxy
from caldera.testing.waiting import wait_until
from caldera.utils.clock import ManualClock, SystemClock

TIMEOUT = 3.0  # the etcd client's per-call deadline in these tests


def answering(probe: Callable[[], bool]) -> Callable[[], bool]:
    """`probe` as a wait's predicate after an outage: `Unavailable` is "not yet" (the first calls may still meet the
    old connection, e.g. the one a keepalive ping that timed out closes when it ends, while the channel reconnects)."""

    def predicate() -> bool:
        try:
            return probe()
        except Unavailable:
            return False

    return predicate


@dataclass
class Outage:
    """A client whose connection to the store the test can cut and restore."""

    kv: KV
    cut: Callable[[], None]
    restore: Callable[[], None]


class Store(ABC):
    name: str
    kv: KV
    prefix: str

    @abstractmethod
    def elapse(self, seconds: float) -> None:
        """Let `seconds` of the store's time go by (leases age)."""

    @abstractmethod
    def wait_expired(self, key: str, ttl: int) -> None:
        """Let a lease of `ttl` run out and return once `key`, attached to it, is gone."""

    @abstractmethod
    def outage(self) -> AbstractContextManager[Outage]:
        """A second client whose connection the test can cut and restore."""

    def close(self) -> None:
        self.kv.close()


class MemoryStore(Store):
    name = "memory"

    def __init__(self) -> None:
        self.clock = ManualClock(1000.0)
        self.memory = MemoryKV(self.clock)
        self.kv = self.memory
        self.prefix = "/t/"

    def elapse(self, seconds: float) -> None:
        self.clock.advance(seconds)

    def wait_expired(self, key: str, ttl: int) -> None:
        self.clock.advance(ttl)
        assert self.memory.expire() >= 1
        assert self.kv.get(key) is None

    @contextmanager
    def outage(self) -> Iterator[Outage]:
        yield Outage(self.kv, lambda: self.memory.set_reachable(False), lambda: self.memory.set_reachable(True))

    def close(self) -> None:
        try:
            self.memory.flush()  # a callback that raised fails the test here
        finally:
            self.memory.close()


class EtcdStore(Store):
    name = "etcd"

    def __init__(self, server: EtcdServer) -> None:
        self.server = server
        self.kv = connect(server.endpoint, timeout=TIMEOUT)
        self.prefix = f"/t/{uuid.uuid4().hex[:8]}/"

    def elapse(self, seconds: float) -> None:
        SystemClock().sleep(seconds)  # etcd ages leases in real time; nothing to wait *for* here

    def wait_expired(self, key: str, ttl: int) -> None:
        # etcd enforces a minimum TTL of 1.5 × election timeout (2 s here) and revokes within ~0.5 s.
        wait_until(lambda: self.kv.get(key) is None, timeout=ttl + 5, what=f"{key} to expire with its lease")

    @contextmanager
    def outage(self) -> Iterator[Outage]:
        with TcpProxy(self.server.endpoint) as proxy:
            kv: EtcdKV = connect(proxy.endpoint, timeout=TIMEOUT)
            try:
                yield Outage(kv, proxy.cut, proxy.restore)
            finally:
                kv.close()


@dataclass
class Recorder:
    """A watch callback (and on_error) that keeps what it got and wakes waiters."""

    events: list[WatchEvent] = field(default_factory=list)
    errors: list[KVError] = field(default_factory=list)
    threads: set[int] = field(default_factory=set)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def __call__(self, event: WatchEvent) -> None:
        with self.changed:
            self.events.append(event)
            self.threads.add(threading.get_ident())
            self.changed.notify_all()

    def on_error(self, error: KVError) -> None:
        with self.changed:
            self.errors.append(error)
            self.changed.notify_all()

    def wait_events(self, count: int, timeout: float = 10.0) -> list[WatchEvent]:
        wait_until(lambda: len(self.events) >= count, timeout, f"{count} watch events", condition=self.changed)
        return list(self.events)

    def wait_errors(self, count: int = 1, timeout: float = 15.0) -> list[KVError]:
        wait_until(lambda: len(self.errors) >= count, timeout, f"{count} watch errors", condition=self.changed)
        return list(self.errors)

    def seen(self) -> list[tuple[str, str, str]]:
        return [(e.kind, e.key, e.value) for e in self.events]
