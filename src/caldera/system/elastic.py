"""etcd for elastic jobs on the embedded cluster: the server the daemon supervises, and what it writes there.

`caldera up` gives elastic jobs an etcd server: the one named by `--elastic-server`, else
one it starts itself (`$CALDERA_HOME/etcd/`, loopback ports chosen once and kept in
`server.json`) when an etcd binary is installed, else none (an elastic job is then refused
at apply with the reason). A server the daemon started outlives a daemon stopped without
`caldera down` (the pods still training use it) and is adopted by the next daemon; one that
died is started again on the same ports and data, so the address in the pods' environment
stays right. `caldera down` stops it.

The daemon writes to etcd only what it knows first: the wanted size of a job when it is
created and when it is scaled (before pods are added or removed, so the launchers do not wait for a count that
is no longer wanted), the end of a pod (its launcher's keys are deleted at once, so the
survivors re-form in milliseconds instead of waiting for the lease to run out), and the end
of a job (its keys are removed). These writes run on one background thread: the control
loop never waits for etcd.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from caldera.backends.shim import write_json_atomic
from caldera.core import objects as o
from caldera.core.elastic import elastic_tasks, is_elastic, job_id
from caldera.launcher import rendezvous
from caldera.launcher.etcd import connect
from caldera.launcher.kv import KV, KVError
from caldera.launcher.server import EtcdServer, EtcdServerError, find_etcd

log = logging.getLogger("caldera.elastic")
STATE_FILE = "server.json"


class ElasticService:
    """The elastic server's address, its supervision, and the daemon's writes to it."""

    def __init__(self, home: Path, external: str | None = None) -> None:
        self.dir = home / "etcd"
        self.external = external or ""
        self.endpoint = self.external
        self.why_none = ""  # why there is no server, for the message refusing an elastic job
        self._server: EtcdServer | None = None
        self._adopted_pid: int | None = None
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None
        self._kv: KV | None = None
        self._lock = threading.Lock()
        self._writes = ThreadPoolExecutor(max_workers=1, thread_name_prefix="caldera-elastic")

    # ------------------------------------------------------------ the server

    def start(self) -> None:
        """Find or start the server; never raises (no server means elastic jobs are refused, with why)."""
        if self.external:
            return
        if find_etcd() is None:
            self.why_none = (
                "no etcd server for elastic jobs: install Debian's etcd-server (make does it), "
                "or start the daemon with `caldera up --elastic-server HOST:PORT`"
            )
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        saved = _read_state(self.dir / STATE_FILE)
        server = EtcdServer(
            self.dir / "data",
            client_port=int(saved.get("clientPort", 0)),
            peer_port=int(saved.get("peerPort", 0)),
            log_file=self.dir / "etcd.log",
        )
        pid = int(saved.get("pid", 0))
        if pid and _alive(pid) and server.healthy():
            self._adopted_pid = pid  # left running by the previous daemon
            self.endpoint = server.endpoint
            self._server = server
            return
        try:
            self._launch(server)
        except EtcdServerError as e:
            self.why_none = f"the etcd server for elastic jobs did not start: {e}"
            log.error("%s", self.why_none)
            return
        self._watcher = threading.Thread(target=self._supervise, name="caldera-etcd", daemon=True)
        self._watcher.start()

    def _launch(self, server: EtcdServer) -> None:
        server.start()
        server.wait_healthy(timeout=30)
        self._server = server
        self.endpoint = server.endpoint
        state: dict[str, object] = {"pid": server.pid, "clientPort": server.client_port, "peerPort": server.peer_port}
        write_json_atomic(self.dir / STATE_FILE, state)  # a reader (the next daemon, a test) sees all or nothing
        log.info("etcd for elastic jobs on %s (pid %s)", server.endpoint, server.pid)

    def _supervise(self) -> None:
        """Start the server again, on the same ports and data, whenever it dies while the daemon runs."""
        while not self._stopping.is_set():
            server = self._server
            if server is None or server.pid is None:
                return
            code = server.wait()
            if self._stopping.is_set():
                return
            log.warning("etcd (pid %s) exited with %s; starting it again", server.pid, code)
            again = EtcdServer(
                server.data_dir, client_port=server.client_port, peer_port=server.peer_port, log_file=server.log_file
            )
            try:
                self._launch(again)
            except EtcdServerError as e:
                log.error("etcd could not be started again: %s", e)
                if self._stopping.wait(1.0):
                    return

    def stop(self, stop_server: bool) -> None:
        """Finish pending writes; with `stop_server` (caldera down) also stop the etcd this daemon runs."""
        self._stopping.set()
        self._writes.shutdown(wait=True)
        with self._lock:
            if self._kv is not None:
                with contextlib.suppress(KVError):
                    self._kv.close()
                self._kv = None
        if not stop_server:
            return
        if self._server is not None and self._server.running:
            self._server.stop()
        elif self._adopted_pid is not None and _alive(self._adopted_pid):
            os.kill(self._adopted_pid, 15)
        with contextlib.suppress(OSError):
            (self.dir / STATE_FILE).unlink()

    # ------------------------------------------------------------ what the daemon writes

    def check(self, job: o.Job) -> str:
        """Why `job` cannot run here ("" if it can): an elastic job needs a server."""
        if self.endpoint or not is_elastic(job):
            return ""
        return self.why_none or "no etcd server for elastic jobs"

    def set_target(self, job: o.Job, replicas: int) -> None:
        """The wanted size, written before the pods change (synchronously: scale waits for it)."""
        if self.endpoint:
            rendezvous.set_target(self._client(), job_id(job), replicas)

    def job_created(self, job: o.Job) -> None:
        """The wanted size from the start: without it the launchers want the maximum and wait for it."""
        names = elastic_tasks(job)
        task = job.spec.task(names[0]) if names else None
        if task is not None:
            replicas = task.replicas
            self._later(lambda kv: rendezvous.set_target(kv, job_id(job), replicas))

    def pod_ended(self, job: o.Job, pod: str) -> None:
        self._later(lambda kv: rendezvous.remove_pod(kv, job_id(job), pod))

    def job_gone(self, job: o.Job) -> None:
        self._later(lambda kv: rendezvous.clean(kv, job_id(job)))

    def _later(self, write: Callable[[KV], object]) -> None:
        if not self.endpoint or self._stopping.is_set():
            return

        def run() -> None:
            try:
                write(self._client())
            except KVError as e:  # the launchers' leases and watches still get there, only later
                log.warning("elastic write to etcd failed: %s", e)
                self._reset()

        self._writes.submit(run)

    def _client(self) -> KV:
        with self._lock:
            if self._kv is None:
                self._kv = connect(self.endpoint, timeout=5.0)
            return self._kv

    def _reset(self) -> None:
        with self._lock:
            if self._kv is not None:
                with contextlib.suppress(KVError):
                    self._kv.close()
            self._kv = None


def _read_state(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {k: int(v) for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
