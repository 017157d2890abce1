"""`EtcdKV`: the `kv.KV` contract over a real etcd v3 server; the only module that imports the etcd client.

The client is etcd-sdk-python (`pyetcd`, reference/elastic-etcd.md §c.2): we use its generated gRPC
stubs and messages (`pyetcd.etcdrpc`) on a channel we own, not its `Etcd3Client` wrapper, because
that wrapper marks its only endpoint failed for 300 s after one UNAVAILABLE answer (every later
call raises a bare ValueError, so a launcher could not come back after a network blip) and closes
its shared watch stream whenever any unary call fails.

Invariants:
- Every unary call carries a deadline (`timeout`); a hung server costs at most that long.
  Watches are long-lived streams: gRPC keep-alive pings (every `keepalive` = 10 s, answer within
  `timeout`) notice a silent server, and a lost connection ends the stream at once.
- Errors are `kv` errors, never gRPC ones: UNAVAILABLE / DEADLINE_EXCEEDED → `Unavailable`,
  "requested lease not found" → `LeaseNotFound`, anything else → `KVError` with etcd's message.
- An expired lease is never silent: `refresh` returns etcd's TTL, which is 0 for a lease it no
  longer has.
- A watch delivers its events on its own thread, in revision order, and calls `on_error` exactly
  once if its stream breaks (not when it is cancelled or the store closed); then nothing more.
- Reconnection is gRPC's: backoff is capped at 1 s, so a restored server is used again within
  about a second.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from pyetcd import etcdrpc
from pyetcd.etcdrpc import kv_pb2

from caldera.launcher.kv import DELETE, PUT, Cancel, KeyValue, KVError, LeaseNotFound, Unavailable, WatchEvent

log = logging.getLogger(__name__)

_UNREACHABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}
KEEPALIVE = 10.0  # seconds between pings on a quiet watch; etcd refuses < 5 s (--grpc-keepalive-min-time)


def parse_endpoint(endpoint: str) -> tuple[str, int]:
    """`host:port` or `http://host:port` → (host, port); ValueError naming the rule otherwise."""
    rest = endpoint.strip()
    if rest.startswith("https://"):
        raise ValueError(f"etcd endpoint {endpoint!r}: TLS (https://) is not supported; use host:port")
    rest = rest.removeprefix("http://").rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"etcd endpoint {endpoint!r}: expected host:port (or http://host:port)")
    return host.strip("[]"), int(port)


def connect(endpoint: str, timeout: float = 5.0, *, keepalive: float = KEEPALIVE) -> EtcdKV:
    """A client for the etcd server at `endpoint`, checked to answer; Unavailable if it does not.

    `timeout` bounds every call (and the wait for a keep-alive ping's answer); a watch on a server
    that stopped answering breaks after about `keepalive + timeout` seconds.
    """
    host, port = parse_endpoint(endpoint)
    kv = EtcdKV(host, port, timeout, keepalive=keepalive)
    try:
        kv.revision()
    except KVError:
        kv.close()
        raise
    return kv


def prefix_end(prefix: bytes) -> bytes:
    """etcd's range end for "every key starting with prefix" (b"\\0" = to the end of the keyspace)."""
    end = bytearray(prefix)
    while end and end[-1] == 0xFF:
        end.pop()
    if not end:
        return b"\0"
    end[-1] += 1
    return bytes(end)


class EtcdKV:
    def __init__(self, host: str, port: int, timeout: float = 5.0, *, keepalive: float = KEEPALIVE) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, not {timeout}")
        self.endpoint = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.timeout = timeout
        self._channel = grpc.insecure_channel(
            self.endpoint,
            options=[
                ("grpc.enable_http_proxy", 0),  # loopback etcd must not go through $http_proxy
                ("grpc.http2.bdp_probe", 0),  # its pings (60 s timeout) would hold back the keep-alive ping
                ("grpc.keepalive_time_ms", int(keepalive * 1000)),
                ("grpc.keepalive_timeout_ms", max(1000, int(timeout * 1000))),
                ("grpc.http2.ping_timeout_ms", max(1000, int(timeout * 1000))),
                ("grpc.keepalive_permit_without_calls", 0),
                ("grpc.http2.max_pings_without_data", 0),
                ("grpc.initial_reconnect_backoff_ms", 100),
                ("grpc.min_reconnect_backoff_ms", 100),
                ("grpc.max_reconnect_backoff_ms", 1000),
            ],
        )
        self._kv = etcdrpc.KVStub(self._channel)
        self._lease = etcdrpc.LeaseStub(self._channel)
        self._watch = etcdrpc.WatchStub(self._channel)
        self._lock = threading.Lock()
        self._watches: set[_PrefixWatch] = set()
        self._closed = False

    # -- reads -------------------------------------------------------------------------------

    def get(self, key: str) -> KeyValue | None:
        resp = self._call(self._kv.Range, etcdrpc.RangeRequest(key=key.encode()), f"get {key!r}")
        return _key_value(resp.kvs[0]) if resp.kvs else None

    def get_prefix(self, prefix: str) -> list[KeyValue]:
        start = prefix.encode()
        request = etcdrpc.RangeRequest(
            key=start or b"\0",
            range_end=prefix_end(start),
            sort_order=etcdrpc.RangeRequest.ASCEND,
            sort_target=etcdrpc.RangeRequest.KEY,
        )
        resp = self._call(self._kv.Range, request, f"get prefix {prefix!r}")
        return [_key_value(kv) for kv in resp.kvs]

    def revision(self) -> int:
        resp = self._call(self._kv.Range, etcdrpc.RangeRequest(key=b"\0", count_only=True), "read revision")
        return int(resp.header.revision)

    # -- writes ------------------------------------------------------------------------------

    def put(self, key: str, value: str, lease: int = 0) -> int:
        request = etcdrpc.PutRequest(key=key.encode(), value=value.encode(), lease=lease)
        return int(self._call(self._kv.Put, request, f"put {key!r}").header.revision)

    def create(self, key: str, value: str, lease: int = 0) -> bool:
        compare = etcdrpc.Compare(
            key=key.encode(), result=etcdrpc.Compare.EQUAL, target=etcdrpc.Compare.VERSION, version=0
        )
        return self._put_if(compare, key, value, lease, f"create {key!r}")

    def replace(self, key: str, mod_revision: int, value: str, lease: int = 0) -> bool:
        compare = etcdrpc.Compare(
            key=key.encode(), result=etcdrpc.Compare.EQUAL, target=etcdrpc.Compare.MOD, mod_revision=mod_revision
        )
        return self._put_if(compare, key, value, lease, f"replace {key!r}@{mod_revision}")

    def delete(self, key: str) -> bool:
        resp = self._call(self._kv.DeleteRange, etcdrpc.DeleteRangeRequest(key=key.encode()), f"delete {key!r}")
        return int(resp.deleted) > 0

    def delete_prefix(self, prefix: str) -> int:
        start = prefix.encode()
        request = etcdrpc.DeleteRangeRequest(key=start or b"\0", range_end=prefix_end(start))
        return int(self._call(self._kv.DeleteRange, request, f"delete prefix {prefix!r}").deleted)

    def _put_if(self, compare: Any, key: str, value: str, lease: int, what: str) -> bool:
        put = etcdrpc.RequestOp(request_put=etcdrpc.PutRequest(key=key.encode(), value=value.encode(), lease=lease))
        resp = self._call(self._kv.Txn, etcdrpc.TxnRequest(compare=[compare], success=[put]), what)
        return bool(resp.succeeded)

    # -- leases ------------------------------------------------------------------------------

    def grant(self, ttl: int) -> int:
        if ttl <= 0:
            raise ValueError(f"a lease's ttl must be at least 1 second, not {ttl}")
        resp = self._call(self._lease.LeaseGrant, etcdrpc.LeaseGrantRequest(TTL=ttl, ID=0), f"grant lease ttl={ttl}")
        if resp.error:
            raise KVError(f"etcd at {self.endpoint}: grant lease ttl={ttl}: {resp.error}")
        return int(resp.ID)

    def refresh(self, lease: int) -> int:
        # A keep-alive stream carrying one request; etcd answers TTL 0 for a lease it no longer has.
        self._check_open()
        stream = self._lease.LeaseKeepAlive(iter([etcdrpc.LeaseKeepAliveRequest(ID=lease)]), timeout=self.timeout)
        try:
            return int(next(stream).TTL)
        except grpc.RpcError as exc:
            raise _error(self.endpoint, exc, f"refresh lease {lease:x}") from None
        except StopIteration:
            raise Unavailable(f"etcd at {self.endpoint}: refresh lease {lease:x}: no answer") from None
        finally:
            stream.cancel()

    def revoke(self, lease: int) -> None:
        with contextlib.suppress(LeaseNotFound):  # already gone: the contract's "not an error"
            self._call(self._lease.LeaseRevoke, etcdrpc.LeaseRevokeRequest(ID=lease), f"revoke lease {lease:x}")

    # -- watches -----------------------------------------------------------------------------

    def watch_prefix(
        self,
        prefix: str,
        callback: Callable[[WatchEvent], None],
        start_revision: int = 0,
        on_error: Callable[[KVError], None] | None = None,
    ) -> Cancel:
        self._check_open()
        watch = _PrefixWatch(self._watch, self.endpoint, self.timeout, prefix, callback, start_revision, on_error)
        with self._lock:
            self._watches.add(watch)
        try:
            watch.wait_created()
        except KVError:
            self._forget(watch)
            raise

        def cancel() -> None:
            watch.stop()
            self._forget(watch)

        return cancel

    def _forget(self, watch: _PrefixWatch) -> None:
        with self._lock:
            self._watches.discard(watch)

    # -- lifecycle and errors ----------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            watches, self._watches = list(self._watches), set()
        for watch in watches:
            watch.stop()
        self._channel.close()

    def _check_open(self) -> None:
        if self._closed:
            raise KVError(f"etcd client for {self.endpoint} is closed")

    def _call(self, method: Callable[..., Any], request: Any, what: str) -> Any:
        self._check_open()
        try:
            return method(request, timeout=self.timeout)
        except grpc.RpcError as exc:
            raise _error(self.endpoint, exc, what) from None
        except ValueError as exc:  # grpc: "Cannot invoke RPC on closed channel!"
            raise KVError(f"etcd at {self.endpoint}: {what}: {exc}") from None


class _PrefixWatch:
    """One etcd watch stream for one prefix, read by its own thread."""

    def __init__(
        self,
        stub: Any,
        endpoint: str,
        timeout: float,
        prefix: str,
        callback: Callable[[WatchEvent], None],
        start_revision: int,
        on_error: Callable[[KVError], None] | None,
    ) -> None:
        self._endpoint = endpoint
        self._timeout = timeout
        self._prefix = prefix
        self._callback = callback
        self._on_error = on_error
        self._requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
        start = prefix.encode()
        create = etcdrpc.WatchCreateRequest(key=start or b"\0", range_end=prefix_end(start))
        if start_revision > 0:
            create.start_revision = start_revision
        self._requests.put(etcdrpc.WatchRequest(create_request=create))
        self._created = threading.Event()
        self._failure: KVError | None = None
        self._stopped = threading.Event()
        self._stream = stub.Watch(self._outgoing())
        self._thread = threading.Thread(target=self._run, name=f"etcd-watch {prefix}", daemon=True)
        self._thread.start()

    def _outgoing(self) -> Iterator[Any]:
        while (request := self._requests.get()) is not None:
            yield request

    def wait_created(self) -> None:
        if not self._created.wait(self._timeout):
            self.stop()
            raise Unavailable(f"etcd at {self._endpoint}: watch {self._prefix!r}: not created in {self._timeout:g}s")
        if self._failure is not None:
            self.stop()
            raise self._failure

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._requests.put(None)
        self._stream.cancel()
        if threading.current_thread() is not self._thread:
            self._thread.join(self._timeout)

    def _run(self) -> None:
        what = f"watch {self._prefix!r}"
        error: KVError | None = None
        try:
            for resp in self._stream:
                if resp.created:
                    self._created.set()
                if resp.compact_revision:
                    error = KVError(f"etcd at {self._endpoint}: {what}: revision {resp.compact_revision} compacted")
                    break
                if resp.canceled:
                    error = KVError(f"etcd at {self._endpoint}: {what}: cancelled by the server: {resp.cancel_reason}")
                    break
                for event in resp.events:
                    if self._stopped.is_set():
                        return
                    self._deliver(event)
            else:
                error = Unavailable(f"etcd at {self._endpoint}: {what}: stream ended")
        except grpc.RpcError as exc:
            error = _error(self._endpoint, exc, what)
        if error is None or self._stopped.is_set():
            return
        self._requests.put(None)
        self._stream.cancel()
        if not self._created.is_set():
            self._failure = error  # watch_prefix raises it
            self._created.set()
        elif self._on_error is not None:
            try:
                self._on_error(error)
            except Exception:
                log.exception("etcd watch %r: on_error failed on %s", self._prefix, error)

    def _deliver(self, event: Any) -> None:
        kind = DELETE if event.type == kv_pb2.Event.DELETE else PUT
        value = "" if kind == DELETE else event.kv.value.decode()
        change = WatchEvent(kind, event.kv.key.decode(), value, int(event.kv.mod_revision))
        try:
            self._callback(change)
        except Exception:  # a bug in the caller's callback must not end the watch silently
            log.exception("etcd watch %r: callback failed on %s", self._prefix, change)


def _error(endpoint: str, exc: grpc.RpcError, what: str) -> KVError:
    code = exc.code() if isinstance(exc, grpc.Call) else None
    details = (exc.details() if isinstance(exc, grpc.Call) else None) or str(exc)
    message = f"etcd at {endpoint}: {what}: {details}"
    if code in _UNREACHABLE:
        return Unavailable(message)
    if code == grpc.StatusCode.NOT_FOUND and "lease not found" in details:
        return LeaseNotFound(message)
    return KVError(message)


def _key_value(kv: Any) -> KeyValue:
    return KeyValue(
        key=kv.key.decode(),
        value=kv.value.decode(),
        create_revision=int(kv.create_revision),
        mod_revision=int(kv.mod_revision),
        lease=int(kv.lease),
    )
