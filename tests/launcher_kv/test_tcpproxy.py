"""TcpProxy: forwards bytes, cuts every connection on demand, refuses new ones until restored."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from caldera.testing.tcpproxy import TcpProxy
from caldera.testing.waiting import wait_until


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    """A loopback echo server, one thread per connection."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    threads: list[threading.Thread] = []

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                while data := conn.recv(4096):
                    conn.sendall(data)
            except OSError:
                pass

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=serve, args=(conn,), daemon=True)
            threads.append(thread)
            thread.start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    yield listener.getsockname()
    listener.shutdown(socket.SHUT_RDWR)
    listener.close()
    acceptor.join(5)
    for thread in threads:
        thread.join(5)


def roundtrip(sock: socket.socket, payload: bytes) -> bytes:
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(4096)
        if not chunk:
            break
        got += chunk
    return got


def broken(sock: socket.socket) -> bool:
    """Whether the connection is gone: EOF or reset on the next read or write."""
    try:
        sock.sendall(b"ping")
        return sock.recv(4096) == b""
    except OSError:
        return True


def refused(port: int) -> bool:
    """Whether a new connection is turned away (the reset may already hit `connect`)."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return True
    with sock:
        return broken(sock)


def test_the_proxy_forwards_and_can_be_cut_and_restored(echo):
    with TcpProxy(echo) as proxy:
        first = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        with first:
            assert roundtrip(first, b"hello" * 1000) == b"hello" * 1000
            proxy.cut()
            assert broken(first)
        assert refused(proxy.port)
        proxy.restore()
        again = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        with again:
            assert roundtrip(again, b"back") == b"back"
        assert proxy.accepted == 2


def test_a_client_that_closes_leaves_no_connection_behind(echo):
    with TcpProxy(echo) as proxy:
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
                assert roundtrip(sock, b"x") == b"x"
        assert proxy.accepted == 3
        wait_until(lambda: proxy.connections == 0, timeout=5, what="the proxy to drop closed connections")
