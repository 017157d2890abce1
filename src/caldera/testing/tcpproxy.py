"""A loopback TCP proxy a test can cut and restore, to make a client's connection drop and come back.

`TcpProxy(target).start()` listens on a free 127.0.0.1 port (`endpoint`) and forwards every
connection to `target` with two pump threads. `cut()` resets every open connection and, until
`restore()`, resets each new one as soon as it is accepted (to the client that is a refused
connection). The server behind it never notices anything but its clients going away.
`close()` (or leaving the `with` block) stops the proxy and joins its threads.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading
from types import TracebackType

_CONNECT_TIMEOUT = 5.0


def _reset(sock: socket.socket) -> None:
    """Close with RST rather than FIN: the peer sees the connection broken, not finished."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


class TcpProxy:
    def __init__(self, target: str | tuple[str, int], host: str = "127.0.0.1") -> None:
        if isinstance(target, str):
            target_host, _, port = target.removeprefix("http://").rpartition(":")
            target = (target_host, int(port))
        self.target = target
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((host, 0))
        self.host = host
        self.port = int(self._listener.getsockname()[1])
        self._wake_r, self._wake_w = socket.socketpair()
        self._lock = threading.Lock()
        self._cut = False
        self._closed = False
        self._pairs: set[_Pair] = set()
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept_loop, name=f"tcpproxy:{self.port}", daemon=True)
        self.accepted = 0  # connections accepted and forwarded, for tests to check

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connections(self) -> int:
        """Connections being forwarded now."""
        with self._lock:
            return len(self._pairs)

    def start(self) -> TcpProxy:
        self._listener.listen(64)
        self._acceptor.start()
        return self

    def cut(self) -> None:
        """Reset every connection through the proxy and refuse new ones until `restore()`."""
        with self._lock:
            self._cut = True
            pairs, self._pairs = self._pairs, set()
        for pair in pairs:
            pair.reset()

    def restore(self) -> None:
        """Forward new connections again."""
        with self._lock:
            self._cut = False

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.cut()
        self._wake_w.send(b"x")
        if self._acceptor.is_alive():
            self._acceptor.join()
        for thread in list(self._threads):
            thread.join()
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while True:
                ready = {key.fileobj for key, _ in selector.select()}
                if self._wake_r in ready:
                    return
                client, _ = self._listener.accept()
                self._forward(client)

    def _forward(self, client: socket.socket) -> None:
        with self._lock:
            refused = self._cut or self._closed
        if refused:
            _reset(client)
            return
        try:
            upstream = socket.create_connection(self.target, timeout=_CONNECT_TIMEOUT)
        except OSError:
            _reset(client)
            return
        upstream.settimeout(None)
        pair = _Pair(client, upstream)
        with self._lock:
            if self._cut or self._closed:
                pair.reset()
                return
            self._pairs.add(pair)
            self.accepted += 1
            self._threads = [t for t in self._threads if t.is_alive()]
            for src, dst in ((client, upstream), (upstream, client)):
                thread = threading.Thread(target=self._pump, args=(src, dst, pair), daemon=True)
                self._threads.append(thread)
                thread.start()

    def _pump(self, src: socket.socket, dst: socket.socket, pair: _Pair) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:  # reset or cut: end both directions
            with self._lock:
                self._pairs.discard(pair)
            pair.reset()
            return
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)  # pass the FIN on; the other direction may still flow
        if pair.one_direction_done():
            with self._lock:
                self._pairs.discard(pair)


class _Pair:
    """A client connection and its upstream; closed when both directions ended, or reset at once."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self._lock = threading.Lock()
        self._open_directions = 2

    def one_direction_done(self) -> bool:
        """Note one direction finished; close both sockets (True) once the second one has."""
        with self._lock:
            self._open_directions -= 1
            done = self._open_directions == 0
        if done:
            self.client.close()
            self.upstream.close()
        return done

    def reset(self) -> None:
        _reset(self.client)
        _reset(self.upstream)
