"""EtcdServer: a real etcd process started, found healthy, and stopped by PID; the test helper around it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from caldera.launcher.etcd import connect
from caldera.launcher.server import EtcdServer, EtcdServerError, find_etcd
from caldera.testing.etcd import running_etcd
from caldera.testing.waiting import wait_until


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_an_etcd_binary_is_found():
    binary = find_etcd()
    assert binary is not None and os.access(binary, os.X_OK)


def test_running_etcd_serves_on_loopback_and_leaves_nothing_behind():
    with running_etcd() as server:
        assert server.endpoint == f"127.0.0.1:{server.client_port}"
        assert server.healthy()
        pid = server.pid
        assert pid is not None and alive(pid)
        root = server.data_dir.parent
        kv = connect(server.endpoint, timeout=3.0)
        try:
            assert kv.put("/hello", "world") > 1
        finally:
            kv.close()
    assert not alive(pid)
    assert not root.exists()


def test_a_taken_port_is_refused_before_starting(tmp_path: Path, etcd_server):
    clash = EtcdServer(tmp_path / "data", client_port=etcd_server.client_port)
    with pytest.raises(EtcdServerError, match=f"port 127.0.0.1:{etcd_server.client_port} is in use"):
        clash.start()
    assert clash.pid is None
    assert etcd_server.healthy()  # the server that had the port is untouched


def test_an_etcd_that_dies_on_start_is_one_clear_error_with_its_log(tmp_path: Path):
    not_a_dir = tmp_path / "data"
    not_a_dir.write_text("a file where the data dir should be")
    server = EtcdServer(not_a_dir, log_file=tmp_path / "etcd.log")
    server.start()
    try:
        with pytest.raises(EtcdServerError, match="exited with code") as caught:
            server.wait_healthy(timeout=20)
    finally:
        server.stop()
    message = str(caught.value)
    assert str(tmp_path / "etcd.log") in message
    assert str(not_a_dir) in message  # etcd's own words, from the log tail


def test_a_missing_binary_is_one_clear_error(tmp_path: Path):
    server = EtcdServer(tmp_path / "data", binary=str(tmp_path / "no-etcd"))
    with pytest.raises(EtcdServerError, match="cannot run etcd"):
        server.start()
    assert server.stop() is None


def test_stop_kills_a_server_that_ignores_sigterm(tmp_path: Path):
    stubborn = tmp_path / "stubborn"
    stubborn.write_text(
        f"#!{sys.executable}\n"
        "import signal, threading\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "threading.Event().wait()\n"
    )
    stubborn.chmod(0o755)
    server = EtcdServer(tmp_path / "data", binary=str(stubborn), log_file=tmp_path / "out.log")
    server.start()
    pid = server.pid
    assert pid is not None
    wait_until(lambda: "ready" in server.log_tail(), timeout=10, what="the stub to ignore SIGTERM")
    assert server.stop(grace=0.2) == -9
    assert not alive(pid)
    assert server.stop() == -9  # idempotent
