"""What only the etcd adapter has: endpoints, a server that is not there, a server that does not answer."""

from __future__ import annotations

import os
import signal
import socket

import pytest

from caldera.launcher.etcd import connect, parse_endpoint, prefix_end
from caldera.launcher.kv import Unavailable
from caldera.launcher.server import free_port
from caldera.testing.etcd import running_etcd
from caldera.testing.waiting import wait_until

from .harness import Recorder, answering


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("127.0.0.1:2379", ("127.0.0.1", 2379)),
        ("http://127.0.0.1:2379", ("127.0.0.1", 2379)),
        ("http://localhost:32379/", ("localhost", 32379)),
        ("[::1]:2379", ("::1", 2379)),
    ],
    ids=["host-port", "http-url", "trailing-slash", "ipv6"],
)
def test_endpoints_are_host_port_or_an_http_url(endpoint, expected):
    assert parse_endpoint(endpoint) == expected


@pytest.mark.parametrize(
    ("endpoint", "rule"),
    [
        ("127.0.0.1", "expected host:port"),
        ("127.0.0.1:etcd", "expected host:port"),
        ("127.0.0.1:0", "expected host:port"),
        (":2379", "expected host:port"),
        ("https://127.0.0.1:2379", "TLS"),
    ],
    ids=["no-port", "named-port", "port-zero", "no-host", "https"],
)
def test_a_bad_endpoint_is_named_with_the_rule(endpoint, rule):
    with pytest.raises(ValueError, match=rule) as caught:
        parse_endpoint(endpoint)
    assert repr(endpoint) in str(caught.value)


def test_prefix_end_covers_exactly_the_prefix():
    assert prefix_end(b"/a/") == b"/a0"
    assert prefix_end(b"a\xff") == b"b"
    assert prefix_end(b"") == b"\0"
    assert prefix_end(b"\xff\xff") == b"\0"


def test_connecting_to_a_closed_port_is_unavailable():
    port = free_port()  # nobody listens there
    with pytest.raises(Unavailable, match=f"127.0.0.1:{port}"):
        connect(f"127.0.0.1:{port}", timeout=2.0)


def test_a_server_that_never_answers_costs_one_timeout_not_forever():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nothing ever speaks
        with pytest.raises(Unavailable):
            connect(f"127.0.0.1:{silent.getsockname()[1]}", timeout=0.5)


def test_close_with_an_open_watch_stops_it_without_an_error(etcd_server):
    kv = connect(etcd_server.endpoint, timeout=3.0)
    seen = Recorder()
    kv.watch_prefix("/close/", seen, on_error=seen.on_error)
    kv.put("/close/a", "1")
    seen.wait_events(1)
    kv.close()
    assert seen.errors == []  # closing is the caller's doing, not a broken watch


def test_a_watch_on_a_server_that_stopped_answering_breaks_instead_of_waiting_forever():
    # This server accepts pings every second, so the client may send them that often.
    with running_etcd(extra_args=["--grpc-keepalive-min-time=1s"]) as server:
        kv = connect(server.endpoint, timeout=1.0, keepalive=1.0)
        assert server.pid is not None
        try:
            seen = Recorder()
            kv.watch_prefix("/frozen/", seen, on_error=seen.on_error)
            os.kill(server.pid, signal.SIGSTOP)
            try:
                with pytest.raises(Unavailable):
                    kv.put("/frozen/a", "1")
                errors = seen.wait_errors(1, timeout=15)
                assert isinstance(errors[0], Unavailable)
            finally:
                os.kill(server.pid, signal.SIGCONT)
            # The first calls after the thaw may still fail with Unavailable ("Stream removed ... (ping timeout)").
            wait_until(answering(lambda: kv.revision() > 0), timeout=10, what="the thawed server to answer")
        finally:
            kv.close()
