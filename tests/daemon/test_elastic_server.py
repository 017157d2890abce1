"""The etcd the daemon runs for elastic jobs: restarted where it was if it dies, left to the next daemon, stopped by down."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from caldera.launcher.server import find_etcd
from caldera.testing.waiting import wait_until

from .kit import small_cluster

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="no etcd binary (make installs Debian's etcd-server)")


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:  # gone (and reaped) between any check and this read: no kill(0) first to race with
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def server_pid(home: Path) -> int:
    """The pid in server.json (0 while it is missing: the daemon writes it whole, atomically, when etcd is up)."""
    try:
        return int(json.loads((home / "etcd" / "server.json").read_text())["pid"])
    except FileNotFoundError:
        return 0


def test_the_daemon_s_etcd_survives_its_death_and_a_daemon_restart(tmp_path: Path) -> None:
    home = tmp_path / "caldera"
    first = small_cluster(home)
    try:
        endpoint, pid = first.elastic.endpoint, server_pid(home)
        assert endpoint.startswith("127.0.0.1:") and first.info()["elasticServer"] == endpoint

        os.kill(pid, signal.SIGKILL)  # etcd dies while the daemon runs: started again, same address
        wait_until(lambda: server_pid(home) not in (0, pid), timeout=30, what="etcd started again")
        assert first.elastic.endpoint == endpoint
        pid = server_pid(home)
        assert alive(pid)
    finally:
        first.shutdown(stop_pods=False)  # a daemon stopped without `caldera down`: pods (and etcd) go on

    assert alive(pid)
    second = small_cluster(home)
    try:
        assert (second.elastic.endpoint, server_pid(home)) == (endpoint, pid)  # adopted, not started anew
    finally:
        second.shutdown(stop_pods=True)  # `caldera down`
    wait_until(lambda: not alive(pid), timeout=30, what="etcd stopped by down")
    started = first.elastic._server  # this test process is its parent: reap it
    assert started is not None and started.wait() is not None
