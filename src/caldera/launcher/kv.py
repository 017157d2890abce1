"""The small key-value interface the rendezvous needs, and nothing more.

etcd v3 semantics (reference/elastic-etcd.md §c): keys and values are bytes-like
strings, every write bumps one global revision, a key carries the revision that
created it and the one that last changed it, a lease keeps keys alive while it is
refreshed, a watch delivers the changes under a prefix in revision order. Two
transactions cover the protocol: `create` (put if absent) and `replace` (put if the
key's mod revision is still the one read). One adapter talks to a real etcd server
(`caldera.launcher.etcd`); `caldera.launcher.memkv` is the same contract in memory
for unit tests of the logic.

Errors: `Unavailable` when the server cannot be reached (the caller retries);
`LeaseNotFound` when a write names a lease the server no longer has. An expired
lease is never silent: `refresh` returns its remaining TTL, ≤ 0 once expired.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

PUT: Literal["put"] = "put"
DELETE: Literal["delete"] = "delete"


class KVError(Exception):
    """Any failure of the key-value store."""


class Unavailable(KVError):
    """The server could not be reached or did not answer in time; retry later."""


class LeaseNotFound(KVError):
    """A write named a lease that expired or was revoked."""


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: str
    create_revision: int
    mod_revision: int
    lease: int = 0  # 0: no lease


@dataclass(frozen=True, slots=True)
class WatchEvent:
    kind: Literal["put", "delete"]
    key: str
    value: str  # "" for a delete
    revision: int  # the mod revision of the change


class Cancel(Protocol):
    def __call__(self) -> None: ...


class KV(Protocol):
    def get(self, key: str) -> KeyValue | None: ...

    def get_prefix(self, prefix: str) -> list[KeyValue]:
        """Every key starting with `prefix`, sorted by key."""
        ...

    def put(self, key: str, value: str, lease: int = 0) -> int:
        """Write unconditionally; the new revision. LeaseNotFound if `lease` is gone."""
        ...

    def create(self, key: str, value: str, lease: int = 0) -> bool:
        """Write only if the key does not exist (a transaction on version == 0)."""
        ...

    def replace(self, key: str, mod_revision: int, value: str, lease: int = 0) -> bool:
        """Write only if the key's mod revision is still `mod_revision` (0: only if absent)."""
        ...

    def delete(self, key: str) -> bool: ...

    def delete_prefix(self, prefix: str) -> int:
        """Delete every key under `prefix`; how many were deleted."""
        ...

    def grant(self, ttl: int) -> int:
        """A new lease of `ttl` whole seconds (etcd's unit); its id.

        etcd raises a TTL below its minimum (1.5 × the election timeout: 2 s by default) to that
        minimum; `refresh` reports the TTL actually granted."""
        ...

    def refresh(self, lease: int) -> int:
        """Keep a lease alive; its TTL afterwards, ≤ 0 if it had expired (its keys are gone)."""
        ...

    def revoke(self, lease: int) -> None:
        """End a lease now, deleting its keys; a lease already gone is not an error."""
        ...

    def watch_prefix(
        self,
        prefix: str,
        callback: Callable[[WatchEvent], None],
        start_revision: int = 0,
        on_error: Callable[[KVError], None] | None = None,
    ) -> Cancel:
        """Call `callback` (on another thread) for every change under `prefix`, from `start_revision`
        (0: from now on). The returned callable stops the watch. If the watch breaks (the
        connection is lost), `on_error` is called once and nothing more is delivered: the caller
        reads again and watches anew from the revision it has seen."""
        ...

    def revision(self) -> int:
        """The store's current revision (to watch from right after a read)."""
        ...

    def close(self) -> None: ...


KVFactory = Callable[[], KV]
