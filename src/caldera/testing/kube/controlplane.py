"""A real Kubernetes control plane on loopback for tests and benchmarks: etcd, kube-apiserver, optionally
kube-controller-manager.

`ControlPlane(tools, directory).start()` makes fresh secrets (`pki`), starts Debian's etcd (its data
under /dev/shm when there is one: fsyncs cost nothing there, and the benchmark measures schedulers,
not a disk) and kube-apiserver on free 127.0.0.1 ports, waits for `/readyz`, and writes
`kubeconfig` (the admin token, the serving certificate as CA). With `controller_manager=True` it
starts kube-controller-manager with only the garbage collector, namespace and service-account
controllers: owners' deletions cascade, namespaces are emptied and removed, every namespace gets
its `default` service account. Without it the ServiceAccount admission plugin is off (nothing
would create the account pods need). TaintNodesByCondition is always off: fake nodes are Ready at
once and no node lifecycle controller would lift its not-ready taint. WatchList is off: Debian's
etcd 3.4.23 lacks the progress requests its streams need (clients then list and watch, as they did
before watch-list existed).

Invariant: `stop()` (also on a failed start) stops every process it started, by PID, and removes
every file it wrote; it is idempotent.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import threading
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from caldera.backends.kube.client import JSON, Conflict, KubeClient, KubeError, resource_path
from caldera.backends.kube.kubeconfig import KubeConfig
from caldera.launcher.server import EtcdServer, free_port
from caldera.testing.kube.pki import Pki, make_pki
from caldera.testing.kube.process import Process, ProcessError
from caldera.testing.kube.tools import KubeTools
from caldera.utils.clock import SystemClock

SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"  # only numbers in Service objects: nothing routes to them
ETCD_ATTEMPTS = 3
START_TIMEOUT = 180.0  # a loaded 2-core machine starts an API server in 10-40 s
CONTROLLERS = ("garbage-collector-controller", "namespace-controller", "serviceaccount-controller")


class ControlPlaneError(Exception):
    """The control plane could not be started."""


class ControlPlane:
    """etcd + kube-apiserver (+ kube-controller-manager) under `directory`; see the module docstring."""

    def __init__(
        self,
        tools: KubeTools,
        directory: Path | None = None,
        *,
        controller_manager: bool = True,
        apiserver_args: tuple[str, ...] = (),
        etcd_in_memory: bool = True,
    ) -> None:
        self.tools = tools
        self._owned = directory is None
        self.directory = Path(tempfile.mkdtemp(prefix="caldera-kube-")) if directory is None else Path(directory)
        self.with_controller_manager = controller_manager
        self._apiserver_args = apiserver_args
        self._etcd_in_memory = etcd_in_memory
        self._etcd_dir: Path | None = None
        self.etcd: EtcdServer | None = None
        self.pki: Pki | None = None
        self.port = 0
        self.processes: dict[str, Process] = {}
        self._kube: KubeClient | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------ what tests use

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def config(self) -> KubeConfig:
        assert self.pki is not None, "the control plane is not started"
        return KubeConfig(server=self.server, ca_pem=self.pki.serving_cert.read_bytes(), token=self.pki.admin_token)

    @property
    def kube(self) -> KubeClient:
        """A client as the admin, shared (thread-safe); closed at stop()."""
        with self._lock:
            if self._kube is None:
                self._kube = KubeClient(self.config)
            return self._kube

    def kubectl(self, *args: str, input: str | None = None, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Run the built kubectl against this control plane (not checked: look at returncode)."""
        command = [str(self.tools.binary("kubectl")), f"--kubeconfig={self.kubeconfig}", *args]
        return subprocess.run(command, input=input, capture_output=True, text=True, timeout=timeout, check=False)

    def create_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        """A namespace with its `default` service account (made here, so pods can be created at once)."""
        body: JSON = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}
        self._create_if_absent(resource_path("v1", "namespaces"), body)
        account: JSON = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
        self._create_if_absent(resource_path("v1", "serviceaccounts", namespace=name), account)

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision (resourceVersions before it become 410 Gone)."""
        assert self.etcd is not None, "the control plane is not started"
        header = _etcd_call(self.etcd, "kv/range", {"key": _b64("/"), "limit": 1}).get("header") or {}
        revision = int(header["revision"])
        _etcd_call(self.etcd, "kv/compaction", {"revision": revision, "physical": True})
        return revision

    def start_process(self, name: str, command: list[str]) -> Process:
        """Start a process that belongs to this control plane: stopped and its log removed at stop()."""
        if name in self.processes and self.processes[name].running:
            raise ControlPlaneError(f"{name} is already running")
        process = Process(name, command, self.directory / "logs" / f"{name}.log").start()
        self.processes[name] = process
        return process

    def stop_process(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is not None:
            process.stop()

    # ------------------------------------------------------------ lifecycle

    def start(self) -> ControlPlane:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        with self._lock:
            if self._kube is not None:
                self._kube.close()
                self._kube = None
        for name in reversed(list(self.processes)):  # schedulers and KWOK first, the API server, then etcd
            self.processes.pop(name).stop()
        if self._etcd_dir is not None:
            shutil.rmtree(self._etcd_dir, ignore_errors=True)
            self._etcd_dir = None
        if self._owned:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.pki = make_pki(self.directory / "pki")
        shm = Path("/dev/shm")
        in_memory = self._etcd_in_memory and shm.is_dir()
        self._etcd_dir = Path(tempfile.mkdtemp(prefix="caldera-kube-etcd-", dir=shm if in_memory else None))
        self._start_etcd()
        self.port = free_port()
        self.start_process("kube-apiserver", self._apiserver_command())
        self._wait_ready()
        self._write_kubeconfig()
        if self.with_controller_manager:
            self.start_process("kube-controller-manager", self._controller_manager_command())
            self._wait_for_service_account("default")

    def _start_etcd(self) -> None:
        """etcd as one of our processes (so it dies with us too); new ports if they were taken meanwhile."""
        assert self._etcd_dir is not None
        for attempt in range(ETCD_ATTEMPTS):
            self.etcd = EtcdServer(
                self._etcd_dir / f"data-{attempt}",
                # Progress notifications every 5 s (etcd's default is 10 min) move the API server's watch
                # caches forward when nothing changes, so idle watches get bookmarks with fresh versions.
                extra_args=("--quota-backend-bytes=8589934592", "--experimental-watch-progress-notify-interval=5s"),
            )
            process = self.start_process("etcd", self.etcd.command())
            clock, pause = SystemClock(), threading.Event()
            deadline = clock.monotonic() + START_TIMEOUT
            while process.running and not self.etcd.healthy() and clock.monotonic() < deadline:
                pause.wait(0.05)
            if process.running and self.etcd.healthy():
                return
            self.stop_process("etcd")
        raise ControlPlaneError(f"etcd did not start; its log ends with:\n{process.log_tail()}")

    def _apiserver_command(self) -> list[str]:
        assert self.pki is not None and self.etcd is not None
        disabled = ["TaintNodesByCondition"] + ([] if self.with_controller_manager else ["ServiceAccount"])
        return [
            str(self.tools.binary("kube-apiserver")),
            f"--etcd-servers={self.etcd.client_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--tls-cert-file={self.pki.serving_cert}",
            f"--tls-private-key-file={self.pki.serving_key}",
            f"--service-account-key-file={self.pki.service_account_public_key}",
            f"--service-account-signing-key-file={self.pki.service_account_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--token-auth-file={self.pki.token_file}",
            f"--client-ca-file={self.pki.client_ca}",
            "--authorization-mode=RBAC",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--endpoint-reconciler-type=none",  # a loopback address may not be an endpoint of the kubernetes Service
            f"--disable-admission-plugins={','.join(disabled)}",
            "--watch-cache-sizes=podtemplates#0",  # one resource served from etcd itself: tests see a real 410 there
            # Debian's etcd (3.4.23) cannot do the progress requests a watch-list stream needs; with the gate on,
            # every client-go informer would retry its stream forever instead of falling back to list + watch.
            "--feature-gates=WatchList=false",
            "--profiling=false",
            *self._apiserver_args,
        ]

    def _controller_manager_command(self) -> list[str]:
        return [
            str(self.tools.binary("kube-controller-manager")),
            f"--kubeconfig={self.kubeconfig}",
            f"--controllers={','.join(CONTROLLERS)}",
            "--leader-elect=false",
            "--secure-port=0",
            "--kube-api-qps=500",
            "--kube-api-burst=1000",
            "--concurrent-gc-syncs=20",
        ]

    def _wait_ready(self) -> None:
        apiserver = self.processes["kube-apiserver"]
        clock, pause = SystemClock(), threading.Event()
        deadline = clock.monotonic() + START_TIMEOUT
        last = "no answer yet"
        while clock.monotonic() < deadline:
            try:
                apiserver.ensure_running()
            except ProcessError as e:
                raise ControlPlaneError(str(e)) from None
            try:
                self.kube.get_text("/readyz")
                return
            except KubeError as e:
                last = str(e)
            pause.wait(0.2)
        raise ControlPlaneError(
            f"kube-apiserver not ready after {START_TIMEOUT:g}s ({last}); its log ends with:\n{apiserver.log_tail()}"
        )

    def _wait_for_service_account(self, namespace: str) -> None:
        """kube-controller-manager is working once it made the namespace's default service account."""
        clock, pause = SystemClock(), threading.Event()
        deadline = clock.monotonic() + START_TIMEOUT
        path = resource_path("v1", "serviceaccounts", namespace=namespace, name="default")
        while clock.monotonic() < deadline:
            try:
                self.processes["kube-controller-manager"].ensure_running()
            except ProcessError as e:
                raise ControlPlaneError(str(e)) from None
            try:
                self.kube.get(path)
                return
            except KubeError:
                pause.wait(0.2)
        raise ControlPlaneError(
            f"kube-controller-manager made no service account in {namespace!r} after {START_TIMEOUT:g}s; "
            f"its log ends with:\n{self.processes['kube-controller-manager'].log_tail()}"
        )

    def _write_kubeconfig(self) -> None:
        assert self.pki is not None
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "caldera-test",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority-data": _b64(self.pki.serving_cert.read_text()),
                    },
                }
            ],
            "users": [{"name": "admin", "user": {"token": self.pki.admin_token}}],
            "contexts": [{"name": "caldera-test", "context": {"cluster": "caldera-test", "user": "admin"}}],
            "current-context": "caldera-test",
        }
        self.kubeconfig.write_text(yaml.safe_dump(config))
        self.kubeconfig.chmod(0o600)

    def _create_if_absent(self, path: str, body: JSON) -> None:
        try:
            self.kube.create(path, body)
        except Conflict as e:
            if e.reason != "AlreadyExists":
                raise


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _etcd_call(etcd: EtcdServer, method: str, body: dict[str, object]) -> dict[str, Any]:
    """One call to etcd's v3 JSON gateway (plain urllib on loopback, never through a proxy)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(
        f"{etcd.client_url}/v3/{method}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with opener.open(request, timeout=30) as reply:
        answer = json.loads(reply.read().decode())
    if not isinstance(answer, dict):
        raise ControlPlaneError(f"etcd's {method} answered {answer!r}")
    return answer
