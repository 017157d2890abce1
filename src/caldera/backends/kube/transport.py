"""The HTTP/1.1 connections under `KubeClient`: one kept-alive connection per thread, on the standard library.

    transport = Transport(server, tls_context, tls_server_name, timeout, user_agent)
    reply = transport.request("POST", "/api/v1/namespaces/a/pods?fieldManager=x", body, headers)
    reply.status, reply.reason, reply.body      # the body decompressed (the apiserver gzips large replies)
    with transport.stream("/api/v1/pods?watch=true", headers, read_timeout=120.0) as response:
        for line in iter(response.readline, b""):   # chunked transfer decoded by http.client
            ...

Why not httpx: a controller writing thousands of objects spends its CPU in the client. Measured against
the test control plane, one thread creating pods: httpx 2.9–3.6 ms of client CPU per request, http.client
1.2–1.4 ms with the same JSON and TLS (the request and reply objects, URL parsing, header validation and
h11's state machine are what the difference is made of). Nothing here is Kubernetes-specific.

Invariants:
- A thread's unary requests go over its own connection, which no other thread touches; a connection is
  used again only if the server has not closed it meanwhile (its socket has nothing to read while idle),
  else it is replaced before the request is sent. A request that fails on a connection that was kept
  alive (the server closed it as the request left) is sent once more on a new one if the method is
  idempotent; a POST or PATCH is not sent twice.
- A stream (a watch, a followed log) has a connection of its own for its whole life, closed with it.
- Every failure below HTTP (refused, reset, TLS, timeout) is `Unreachable`; an HTTP error status is a
  reply like any other (the client turns it into an ApiError).
- HTTPS_PROXY and NO_PROXY from the environment are honoured, as kubectl does: an HTTPS server is reached
  through the proxy's CONNECT tunnel (a plain-HTTP API server, which Kubernetes no longer serves, is
  reached directly).
- A thread's connection is closed when the thread ends, all of them by `close()`.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import weakref
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import NamedTuple, NoReturn
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

from caldera.backends.kube.errors import Unreachable

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
# Errors of a kept-alive connection the server closed just as the request was sent.
STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class Reply(NamedTuple):
    status: int
    reason: str
    body: bytes


class _Connection(http.client.HTTPSConnection):
    """An HTTPS connection whose certificate is checked against `tls_server_name` when the kubeconfig gives one
    (the name the server's certificate carries, when the address does not)."""

    def __init__(self, host: str, port: int | None, *, timeout: float, context: ssl.SSLContext, sni: str | None):
        super().__init__(host, port, timeout=timeout, context=context)
        self._tls, self._sni = context, sni

    def connect(self) -> None:
        if self._sni is None:
            super().connect()  # the name checked is the server's (the tunnel's target through a proxy)
            return
        http.client.HTTPConnection.connect(self)  # TCP (and the proxy's tunnel); TLS below with the given name
        self.sock = self._tls.wrap_socket(self.sock, server_hostname=self._sni)


class _Held:
    """One thread's connection, held in its thread-local storage: closed when the thread ends."""

    __slots__ = ("__weakref__", "conn")

    def __init__(self, conn: http.client.HTTPConnection) -> None:
        self.conn = conn


class Transport:
    def __init__(
        self,
        server: str,
        context: ssl.SSLContext | None,
        tls_server_name: str | None,
        timeout: float,
        user_agent: str,
    ) -> None:
        url = urlsplit(server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise Unreachable(f"{server}: not an http(s) URL")
        self.server = server
        self._https = url.scheme == "https"
        self._host, self._port = url.hostname, url.port
        self._prefix = url.path.rstrip("/")  # a server URL may carry a path (a proxy's prefix)
        self._context = context or ssl.create_default_context()
        self._sni = tls_server_name
        self._timeout = timeout
        self._headers = {"User-Agent": user_agent, "Accept": "application/json", "Accept-Encoding": "gzip"}
        self._proxy = _proxy_for(url.hostname) if self._https else None
        self._local = threading.local()
        self._open: weakref.WeakSet[http.client.HTTPConnection] = weakref.WeakSet()
        self._closed = False

    # ------------------------------------------------------------ requests

    def request(self, method: str, target: str, body: bytes | None, headers: Mapping[str, str]) -> Reply:
        """Send one request on this thread's connection and read the whole reply."""
        for attempt in range(2):
            conn, reused = self._connection()
            try:
                conn.request(method, self._prefix + target, body=body, headers={**self._headers, **headers})
                response = conn.getresponse()
                data = response.read()
            except STALE as e:
                self._drop(conn)
                if reused and attempt == 0 and method in IDEMPOTENT:
                    continue
                self._fail(e, f"{method} {target}")
            except (OSError, http.client.HTTPException) as e:
                self._drop(conn)
                self._fail(e, f"{method} {target}")
            except (AttributeError, ValueError):  # `close()` from another thread: http.client's reply lost its file
                self._drop(conn)
                self._fail(ConnectionAbortedError("the client was closed"), f"{method} {target}")
            if response.will_close:
                self._drop(conn)
            if response.getheader("Content-Encoding") == "gzip":
                data = zlib.decompress(data, 16 + zlib.MAX_WBITS)
            return Reply(response.status, response.reason, data)
        raise AssertionError("unreachable")  # the loop returns or raises

    @contextmanager
    def stream(
        self, target: str, headers: Mapping[str, str], read_timeout: float | None
    ) -> Iterator[http.client.HTTPResponse]:
        """A GET whose reply is read as it comes, on a connection of its own; `read_timeout` None waits forever
        for the next bytes. An error status is read whole (`response.read()`) by the caller."""
        conn = self._new_connection()
        try:
            try:
                stream_headers = {**self._headers, **headers, "Accept-Encoding": "identity"}
                conn.request("GET", self._prefix + target, headers=stream_headers)
                response = conn.getresponse()
                if conn.sock is not None:
                    conn.sock.settimeout(read_timeout)
            except (OSError, http.client.HTTPException) as e:
                self._fail(e, f"GET {target}")
            yield response
        finally:
            conn.close()

    def fail(self, e: BaseException, what: str) -> NoReturn:
        """Unreachable for an error met while reading a stream (`OSError`, `http.client.HTTPException`)."""
        self._fail(e, what)

    def close(self) -> None:
        self._closed = True
        for conn in list(self._open):
            conn.close()

    # ------------------------------------------------------------ connections

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection and whether it was used before (a new one if the server closed it)."""
        held: _Held | None = getattr(self._local, "held", None)
        if held is not None:
            if held.conn.sock is not None and not _closed_by_peer(held.conn.sock):
                return held.conn, True
            self._drop(held.conn)
        conn = self._new_connection()
        held = _Held(conn)
        weakref.finalize(held, conn.close)
        self._local.held = held
        return conn, False

    def _new_connection(self) -> http.client.HTTPConnection:
        if self._closed:
            raise Unreachable(f"{self.server}: the client is closed")
        conn: http.client.HTTPConnection
        if not self._https:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        else:
            host, port = self._proxy or (self._host, self._port)
            conn = _Connection(host, port, timeout=self._timeout, context=self._context, sni=self._sni)
            if self._proxy is not None:
                conn.set_tunnel(self._host, self._port)
        self._open.add(conn)
        return conn

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        held: _Held | None = getattr(self._local, "held", None)
        if held is not None and held.conn is conn:
            self._local.held = None

    def _fail(self, e: BaseException, what: str) -> NoReturn:
        if isinstance(e, TimeoutError | socket.timeout):
            raise Unreachable(f"{self.server}: {what}: no answer in time ({type(e).__name__})") from None
        if isinstance(e, ConnectionRefusedError):
            raise Unreachable(f"{self.server}: {what}: cannot connect (connection refused)") from None
        raise Unreachable(f"{self.server}: {what}: {type(e).__name__}: {e}") from None


def _closed_by_peer(sock: socket.socket) -> bool:
    """An idle kept-alive socket that is readable was closed by the server (or holds bytes nobody asked for)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _proxy_for(host: str) -> tuple[str, int] | None:
    """The (host, port) of the HTTPS proxy the environment names, unless NO_PROXY exempts `host`."""
    proxy = getproxies().get("https")
    if not proxy or proxy_bypass(host):
        return None
    url = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if not url.hostname:
        return None
    return url.hostname, url.port or 80
