"""The Kubernetes client's HTTP layer: kept-alive connections the server closed, what is sent again and what is
not, gzip, the TLS server name and an HTTPS proxy's tunnel.

The connection rules are shown against a scripted loopback HTTP server (what a real API server does rarely:
close a kept-alive connection, drop a request unanswered); the TLS and proxy ones against the real API server.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import pytest

from caldera.backends.kube.client import KubeClient, Unreachable
from caldera.backends.kube.kubeconfig import KubeConfig

Answer = Callable[[str, str, int], bytes | None]  # (method, path, connection number) → the reply, None to drop


@dataclass
class Scripted:
    """A loopback HTTP/1.1 server that answers each request as `answer` says; it notes every request."""

    answer: Answer
    close_after_reply: bool = False  # close each connection once it answered (without saying so)
    seen: list[tuple[str, str, int]] = field(default_factory=list)
    connections: int = 0

    def serve(self, sock: socket.socket, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._talk, args=(conn, self.connections), daemon=True).start()

    def _talk(self, conn: socket.socket, number: int) -> None:
        with conn, conn.makefile("rb") as reader:
            while True:
                request = reader.readline()
                if not request:
                    return
                method, path, _ = request.decode().split(" ", 2)
                length = 0
                while (line := reader.readline()) not in (b"\r\n", b""):
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                reader.read(length)
                self.seen.append((method, path, number))
                reply = self.answer(method, path, number)
                if reply is None:
                    return  # dropped: the connection closes with no answer
                conn.sendall(reply)
                if self.close_after_reply:
                    return


def ok(body: bytes = b'{"kind":"Status","ok":true}', headers: str = "") -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{headers}\r\n"
    return head.encode() + body


@contextmanager
def scripted(server: Scripted) -> Iterator[KubeClient]:
    sock = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(sock, stop), daemon=True)
    thread.start()
    kube = KubeClient(KubeConfig(server=f"http://127.0.0.1:{sock.getsockname()[1]}", token="t"), timeout=10.0)
    try:
        yield kube
    finally:
        kube.close()
        stop.set()
        sock.close()
        thread.join(timeout=10)


def test_a_kept_alive_connection_is_used_again_and_replaced_once_the_server_closed_it():
    server = Scripted(lambda method, path, n: ok())
    with scripted(server) as kube:
        for _ in range(3):
            kube.get("/version")
        assert server.connections == 1  # one connection for the three
    server = Scripted(lambda method, path, n: ok(), close_after_reply=True)
    with scripted(server) as kube:
        for _ in range(3):
            assert kube.get("/version") == {"kind": "Status", "ok": True}
        assert server.connections == 3  # each closed by the server, each replaced before the next request


def test_a_request_dropped_on_a_kept_alive_connection_is_sent_again_only_if_idempotent():
    def drop_after_first(method: str, path: str, n: int) -> bytes | None:
        return ok() if path == "/first" else None

    server = Scripted(drop_after_first)
    with scripted(server) as kube:
        kube.get("/first")
        with pytest.raises(Unreachable, match="RemoteDisconnected"):
            kube.get("/again")
    assert [(m, p) for m, p, _ in server.seen] == [("GET", "/first"), ("GET", "/again"), ("GET", "/again")]
    assert [n for _, _, n in server.seen] == [1, 1, 2]  # once more, on a new connection

    server = Scripted(drop_after_first)
    with scripted(server) as kube:
        kube.get("/first")
        with pytest.raises(Unreachable, match="RemoteDisconnected"):
            kube.create("/api/v1/namespaces/a/events", {"kind": "Event"})
    assert [(m, p) for m, p, _ in server.seen] == [("GET", "/first"), ("POST", "/api/v1/namespaces/a/events")]


def test_a_gzipped_reply_is_decompressed():
    body = json.dumps({"items": ["x"] * 1000}).encode()
    server = Scripted(lambda method, path, n: ok(gzip.compress(body), "Content-Encoding: gzip\r\n"))
    with scripted(server) as kube:
        assert kube.get("/api/v1/pods") == {"items": ["x"] * 1000}


@pytest.mark.kube
def test_the_tls_server_name_is_the_name_checked_in_the_servers_certificate(plane):
    # The kit's serving certificate is for 127.0.0.1 and localhost.
    with KubeClient(replace(plane.config, tls_server_name="localhost")) as kube:
        assert kube.get("/version")["gitVersion"] == "v1.36.3"
    with (
        KubeClient(replace(plane.config, tls_server_name="kubernetes.default")) as kube,
        pytest.raises(Unreachable, match="certificate"),
    ):
        kube.get("/version")


class ConnectProxy:
    """A loopback HTTP proxy that only tunnels (CONNECT), counting the tunnels it opened."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.tunnels: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client,), daemon=True).start()

    def _tunnel(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            head += chunk
        target = head.split(b" ")[1].decode()
        self.tunnels.append(target)
        host, port = target.rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            return
        finally:  # one side ended: end both (the other pipe's recv or send then fails and ends it)
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()

    def close(self) -> None:
        self.sock.close()


@pytest.mark.kube
def test_https_proxy_from_the_environment_tunnels_unless_no_proxy_names_the_server(plane, monkeypatch):
    proxy = ConnectProxy()
    try:
        for name in ("https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        with KubeClient(plane.config) as kube:
            assert kube.get("/version")["gitVersion"] == "v1.36.3"
            kube.get("/api/v1/namespaces")  # the same tunnel, kept alive
        assert proxy.tunnels == [f"127.0.0.1:{plane.port}"]
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        with KubeClient(plane.config) as kube:
            kube.get("/version")
        assert len(proxy.tunnels) == 1  # straight to the server
    finally:
        proxy.close()


@pytest.mark.kube
def test_closing_the_client_ends_a_watch_open_in_another_thread_as_unreachable(plane, namespace):
    maps = f"/api/v1/namespaces/{namespace}/configmaps"
    kube = KubeClient(plane.config)
    _, version = kube.list_all(maps)
    first, ended = threading.Event(), []

    def watch() -> None:
        try:
            for _ in kube.watch(maps, resource_version=version, timeout_seconds=300):
                first.set()
        except Exception as e:  # what the watch ended with
            ended.append(e)

    thread = threading.Thread(target=watch)
    thread.start()
    plane.kube.create(maps, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}})
    assert first.wait(60)
    kube.close()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert len(ended) == 1 and isinstance(ended[0], Unreachable), ended
