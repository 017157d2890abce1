"""`MemoryKV`: the `kv.KV` contract in memory, for unit tests of the rendezvous logic.

It keeps etcd's semantics where the protocol can see them: one global revision starting at 1
(a fresh etcd reports 1, so the first write is revision 2); every put is one revision; a
`delete_prefix` and a lease's expiry or revocation delete all their keys in ONE revision, in key
order; a delete of nothing does not bump the revision; a key keeps its create revision until it
is deleted; a transaction (`create`, `replace`) checks its lease only when it writes.

Time: leases expire by the injected clock (`ManualClock` in tests). There is no timer thread:
expiry is checked lazily at the start of every call and when `expire()` is called, so with a
`ManualClock` a test decides exactly when keys vanish (`clock.advance(11); kv.expire()`).

Watches: events are delivered on ONE background thread per store, in revision order, never on
the thread that wrote (as with etcd, a callback may take locks its writer holds). A test makes
delivery deterministic with `flush()`, which returns once every event queued so far has been
delivered, and re-raises the first exception a callback raised (so a broken callback fails the
test instead of vanishing in a thread). A watch keeps the whole history, so `start_revision`
may point anywhere in the past (there is no compaction).

Faults: `set_reachable(False)` makes every call raise `Unavailable` and breaks every watch
(`on_error` once, then nothing) until `set_reachable(True)`; leases keep ticking meanwhile, as
on a real server that a client cannot reach.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from caldera.launcher.kv import DELETE, PUT, Cancel, KeyValue, KVError, LeaseNotFound, Unavailable, WatchEvent
from caldera.utils.clock import Clock, SystemClock

_FIRST_LEASE_ID = 0x7E57_0000_0001  # etcd's ids are large int64s; any non-zero id will do


@dataclass(slots=True)
class _Lease:
    ttl: int
    deadline: float
    keys: set[str] = field(default_factory=set)


@dataclass(slots=True, eq=False)
class _Watch:
    prefix: str
    callback: Callable[[WatchEvent], None]
    on_error: Callable[[KVError], None] | None
    active: bool = True


class MemoryKV:
    """The `KV` contract in memory; thread-safe. See the module docstring for time and watches."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._lock = threading.Lock()
        self._revision = 1
        self._data: dict[str, KeyValue] = {}
        self._leases: dict[int, _Lease] = {}
        self._lease_ids = itertools.count(_FIRST_LEASE_ID)
        self._history: list[WatchEvent] = []
        self._watches: list[_Watch] = []
        self._reachable = True
        self._closed = False
        # Delivery: a queue of (watch, event or error) drained by one thread, started on demand.
        self._queue: deque[tuple[_Watch, WatchEvent | KVError]] = deque()
        self._delivery = threading.Condition()
        self._busy = False  # a callback is running
        self._callback_error: BaseException | None = None
        self._thread: threading.Thread | None = None

    # -- reads -------------------------------------------------------------------------------

    def get(self, key: str) -> KeyValue | None:
        with self._lock:
            self._check_locked()
            return self._data.get(key)

    def get_prefix(self, prefix: str) -> list[KeyValue]:
        with self._lock:
            self._check_locked()
            return [self._data[k] for k in sorted(self._data) if k.startswith(prefix)]

    def revision(self) -> int:
        with self._lock:
            self._check_locked()
            return self._revision

    # -- writes ------------------------------------------------------------------------------

    def put(self, key: str, value: str, lease: int = 0) -> int:
        with self._lock:
            self._check_locked()
            return self._put_locked(key, value, lease)

    def create(self, key: str, value: str, lease: int = 0) -> bool:
        with self._lock:
            self._check_locked()
            if key in self._data:
                return False
            self._put_locked(key, value, lease)
            return True

    def replace(self, key: str, mod_revision: int, value: str, lease: int = 0) -> bool:
        with self._lock:
            self._check_locked()
            current = self._data.get(key)
            if (current.mod_revision if current is not None else 0) != mod_revision:
                return False
            self._put_locked(key, value, lease)
            return True

    def delete(self, key: str) -> bool:
        with self._lock:
            self._check_locked()
            return self._delete_locked([key]) == 1

    def delete_prefix(self, prefix: str) -> int:
        with self._lock:
            self._check_locked()
            return self._delete_locked([k for k in self._data if k.startswith(prefix)])

    # -- leases ------------------------------------------------------------------------------

    def grant(self, ttl: int) -> int:
        if ttl <= 0:
            raise ValueError(f"a lease's ttl must be at least 1 second, not {ttl}")
        with self._lock:
            self._check_locked()
            lease_id = next(self._lease_ids)
            self._leases[lease_id] = _Lease(ttl=ttl, deadline=self._clock.now() + ttl)
            return lease_id

    def refresh(self, lease: int) -> int:
        with self._lock:
            self._check_locked()
            found = self._leases.get(lease)
            if found is None:
                return 0  # what etcd's keep-alive answers for a lease it no longer has
            found.deadline = self._clock.now() + found.ttl
            return found.ttl

    def revoke(self, lease: int) -> None:
        with self._lock:
            self._check_locked()
            self._end_lease_locked(lease)

    def expire(self) -> int:
        """End every lease whose TTL has run out by the clock; how many ended."""
        with self._lock:
            self._check_open_locked()
            return self._expire_locked()

    def ttl(self, lease: int) -> int:
        """The whole seconds a lease has left (etcd's TimeToLive), -1 if it is gone; for tests."""
        with self._lock:
            self._check_locked()
            found = self._leases.get(lease)
            if found is None:
                return -1
            return max(0, int(found.deadline - self._clock.now()))

    # -- watches -----------------------------------------------------------------------------

    def watch_prefix(
        self,
        prefix: str,
        callback: Callable[[WatchEvent], None],
        start_revision: int = 0,
        on_error: Callable[[KVError], None] | None = None,
    ) -> Cancel:
        with self._lock:
            self._check_locked()
            watch = _Watch(prefix=prefix, callback=callback, on_error=on_error)
            if start_revision > 0:
                past = [e for e in self._history if e.revision >= start_revision and e.key.startswith(prefix)]
                self._enqueue([(watch, e) for e in past])
            self._watches.append(watch)

        def cancel() -> None:
            with self._lock:
                watch.active = False
                if watch in self._watches:
                    self._watches.remove(watch)

        return cancel

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until every event queued so far has been delivered; re-raise a callback's exception."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("flush() called from a watch callback would wait for itself")
        with self._delivery:
            if not self._delivery.wait_for(lambda: not self._queue and not self._busy, timeout):
                raise TimeoutError(f"watch callbacks still running after {timeout:g}s")
            error, self._callback_error = self._callback_error, None
        if error is not None:
            raise error

    # -- faults and lifecycle ----------------------------------------------------------------

    def set_reachable(self, reachable: bool) -> None:
        """Simulate losing (False) and regaining (True) the connection to the server."""
        with self._lock:
            if self._reachable and not reachable:
                broken, self._watches = self._watches, []
                for watch in broken:
                    watch.active = False
                self._enqueue([(w, Unavailable("connection to the key-value store lost")) for w in broken])
            self._reachable = reachable

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for watch in self._watches:
                watch.active = False
            self._watches = []
        with self._delivery:
            self._delivery.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    # -- inside the lock ---------------------------------------------------------------------

    def _check_open_locked(self) -> None:
        if self._closed:
            raise KVError("the key-value store is closed")

    def _check_locked(self) -> None:
        self._check_open_locked()
        if not self._reachable:
            raise Unavailable("the key-value store cannot be reached")
        self._expire_locked()

    def _expire_locked(self) -> int:
        now = self._clock.now()
        ended = [lease_id for lease_id, lease in self._leases.items() if lease.deadline <= now]
        for lease_id in ended:
            self._end_lease_locked(lease_id)
        return len(ended)

    def _end_lease_locked(self, lease_id: int) -> None:
        lease = self._leases.pop(lease_id, None)
        if lease is not None:
            self._delete_locked(list(lease.keys))

    def _put_locked(self, key: str, value: str, lease: int) -> int:
        if lease and lease not in self._leases:
            raise LeaseNotFound(f"lease {lease:x} not found (expired or revoked); put {key!r} not written")
        self._revision += 1
        old = self._data.get(key)
        if old is not None and old.lease and old.lease in self._leases:
            self._leases[old.lease].keys.discard(key)
        if lease:
            self._leases[lease].keys.add(key)
        create = old.create_revision if old is not None else self._revision
        self._data[key] = KeyValue(key, value, create, self._revision, lease)
        self._record_locked(WatchEvent(PUT, key, value, self._revision))
        return self._revision

    def _delete_locked(self, keys: list[str]) -> int:
        present = sorted(k for k in keys if k in self._data)
        if not present:
            return 0
        self._revision += 1  # one revision for the whole range, as etcd's DeleteRange
        for key in present:
            old = self._data.pop(key)
            if old.lease and old.lease in self._leases:
                self._leases[old.lease].keys.discard(key)
            self._record_locked(WatchEvent(DELETE, key, "", self._revision))
        return len(present)

    def _record_locked(self, event: WatchEvent) -> None:
        self._history.append(event)
        self._enqueue([(w, event) for w in self._watches if event.key.startswith(w.prefix)])

    def _enqueue(self, items: list[tuple[_Watch, WatchEvent | KVError]]) -> None:
        if not items:
            return
        with self._delivery:
            self._queue.extend(items)
            if self._thread is None:
                self._thread = threading.Thread(target=self._deliver, name="memkv-watch", daemon=True)
                self._thread.start()
            self._delivery.notify_all()

    # -- the delivery thread -----------------------------------------------------------------

    def _deliver(self) -> None:
        while True:
            with self._delivery:
                self._delivery.wait_for(lambda: bool(self._queue) or self._closed)
                if self._closed:
                    self._queue.clear()
                    self._delivery.notify_all()
                    return
                watch, item = self._queue.popleft()
                self._busy = True
            try:
                if isinstance(item, KVError):
                    if watch.on_error is not None:
                        watch.on_error(item)
                elif watch.active:
                    watch.callback(item)
            except BaseException as exc:  # surfaced by flush(): a test must see its callback fail
                with self._delivery:
                    if self._callback_error is None:
                        self._callback_error = exc
            finally:
                with self._delivery:
                    self._busy = False
                    self._delivery.notify_all()
