"""Keeping the launcher's lease alive, and telling the launcher the moment it is not.

The two ways today's launchers lose a node silently (reference/elastic-etcd.md pitfalls 1, 2)
cannot happen here: the loop never dies on an error (it retries with backoff until it is
stopped), and a lease that is gone is reported, never ignored:

- `refresh` answering TTL ≤ 0: the lease expired and its keys are gone → EXPIRED.
- no successful refresh for a whole TTL (the store unreachable): the lease must be presumed
  expired, since peers may already have seen the node leave → STALE.
- the first successful refresh after failures → RESTORED.

Refreshes happen every TTL/5 (so three can fail before a healthy lease is at risk). After an
EXPIRED the lease is not refreshed again: the launcher grants a new one and hands it over
with `use`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from enum import Enum

from caldera.launcher.kv import KV
from caldera.utils.clock import Clock


class LeaseState(Enum):
    EXPIRED = "lease expired"
    STALE = "no keep-alive for a TTL"
    RESTORED = "keep-alive restored"


class KeepAlive:
    """Refreshes one lease at a time; `beat` is one step (tests call it on a ManualClock)."""

    def __init__(self, kv: KV, ttl: int, clock: Clock, report: Callable[[LeaseState, int, str], None]) -> None:
        self._kv = kv
        self._ttl = ttl
        self._clock = clock
        self._report = report
        self.interval = ttl / 5
        self._lock = threading.Lock()
        self._lease = 0
        self._last_ok = clock.now()
        self._failing = False
        self._stale_reported = False
        self._backoff = 0.0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def use(self, lease: int) -> None:
        """Keep `lease` alive from now on (0: none, e.g. while re-registering)."""
        with self._lock:
            self._lease = lease
            self._last_ok = self._clock.now()
            self._stale_reported = False
            self._failing = False
            self._backoff = 0.0
        self._wake.set()

    def beat(self) -> float:
        """Refresh once; the seconds until the next beat."""
        with self._lock:
            lease = self._lease
        if not lease:
            return self.interval
        try:
            left = self._kv.refresh(lease)
        except Exception as e:  # KVError, or a client bug: either way, retry; never die
            return self._failed(lease, e)
        with self._lock:
            if lease != self._lease:
                return 0.0  # replaced meanwhile: refresh the new one now
            if left <= 0:
                self._lease = 0
                expired = True
            else:
                expired = False
                self._last_ok = self._clock.now()
                restored, self._failing = self._failing, False
                self._stale_reported = False
                self._backoff = 0.0
        if expired:
            self._report(LeaseState.EXPIRED, lease, f"lease {lease:x} expired (refresh answered TTL {left})")
        elif restored:
            self._report(LeaseState.RESTORED, lease, f"lease {lease:x} refreshed again (TTL {left})")
        return self.interval

    def _failed(self, lease: int, error: Exception) -> float:
        with self._lock:
            if lease != self._lease:
                return 0.0
            self._failing = True
            self._backoff = min(self.interval, max(0.05, self._backoff * 2))
            silent_for = self._clock.now() - self._last_ok
            stale = silent_for >= self._ttl and not self._stale_reported
            if stale:
                self._stale_reported = True
            delay = self._backoff
        if stale:
            self._report(LeaseState.STALE, lease, f"no keep-alive for {silent_for:.1f}s (TTL {self._ttl}s): {error}")
        return delay

    # -- the thread --------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="caldera-keepalive", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        delay = 0.0
        while not self._stop.is_set():
            # Waiting on an event (not sleeping): `use` and `stop` cut the pause short.
            if delay > 0 and self._wake.wait(delay):
                self._wake.clear()
            if self._stop.is_set():
                return
            delay = self.beat()
