"""The schedulers caldera is measured beside, run on the test control plane: kube-scheduler and Volcano.

- `start_kube_scheduler(plane)`: kube-scheduler with its default profile (`default-scheduler`),
  no leader election, serving only on loopback (its /readyz tells when it is ready to schedule),
  and its client's QPS and burst raised (its default of
  50/s would be what a benchmark measured). It places plain pods one by one: it has no gangs.
- `install_volcano_crds(plane)`: Volcano's CRDs (from its module, see tools/kube/build.sh),
  created and waited for until Established.
- `start_volcano(plane)`: vc-controller-manager (Jobs → PodGroups and pods) and vc-scheduler
  with Volcano's Helm default configuration (the same file as caldera's `volcano-default`
  policy), no leader election, metrics and health servers on loopback. No webhook runs: a Job
  must carry the defaults Volcano's admission webhook would write (`volcano_job_defaults`).

Every process belongs to the control plane: it is stopped and its log removed at teardown.
"""

from __future__ import annotations

import copy
import ssl
import urllib.request
from importlib import resources

import yaml

from caldera.backends.kube.client import JSON, Conflict, NotFound, resource_path
from caldera.launcher.server import free_port
from caldera.testing.kube.controlplane import START_TIMEOUT, ControlPlane
from caldera.testing.kube.process import Process, ProcessError
from caldera.utils.clock import SystemClock

CRDS = resource_path("apiextensions.k8s.io/v1", "customresourcedefinitions")
VOLCANO_SCHEDULER_NAME = "volcano"
VOLCANO_DEFAULT_QUEUE = "default"
VOLCANO_DEFAULT_MAX_RETRY = 3  # Volcano's webhook: DefaultMaxRetry


def start_kube_scheduler(
    plane: ControlPlane, *, qps: int = 5000, burst: int = 10000, timeout: float = START_TIMEOUT
) -> Process:
    """kube-scheduler, returned once its /readyz says its informers are synced and its handlers run."""
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(plane.kubeconfig), "qps": qps, "burst": burst},
        "leaderElection": {"leaderElect": False},
    }
    path = plane.directory / "kube-scheduler.yaml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    scheduler = plane.start_process(
        "kube-scheduler",
        [
            str(plane.tools.binary("kube-scheduler")),
            f"--config={path}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={plane.directory / 'kube-scheduler-certs'}",
        ],
    )
    _wait_ready(scheduler, f"https://127.0.0.1:{port}/readyz", timeout)
    return scheduler


def install_volcano_crds(plane: ControlPlane, *, timeout: float = 120.0) -> list[str]:
    """Create Volcano's CRDs (those present are kept) and wait until each is Established; their names."""
    names = []
    for file in plane.tools.volcano_crds():
        for crd in yaml.safe_load_all(file.read_text()):
            if not crd:
                continue
            names.append(crd["metadata"]["name"])
            try:
                plane.kube.create(CRDS, crd)
            except Conflict as e:
                if e.reason != "AlreadyExists":
                    raise
    clock = SystemClock()
    deadline = clock.monotonic() + timeout
    for name in names:
        while not _established(plane.kube.get(f"{CRDS}/{name}")):
            if clock.monotonic() > deadline:
                raise ProcessError(f"the CRD {name} was not Established after {timeout:g}s")
            clock.sleep(0.1)
    return names


def start_volcano(
    plane: ControlPlane, *, qps: int = 5000, burst: int = 10000, timeout: float = START_TIMEOUT
) -> tuple[Process, Process]:
    """vc-controller-manager and vc-scheduler (Volcano's CRDs must be installed), returned once both answer
    their health checks and the scheduler has made the default queue."""
    conf = plane.directory / "volcano-scheduler.conf"
    conf.write_text(resources.files("caldera.scheduler.policies").joinpath("volcano-default.yaml").read_text())
    common = [
        f"--kubeconfig={plane.kubeconfig}",
        "--leader-elect=false",
        f"--kube-api-qps={qps}",
        f"--kube-api-burst={burst}",
        "--enable-healthz=true",
    ]
    started = []
    for name, extra in (
        ("vc-controller-manager", []),
        ("vc-scheduler", [f"--scheduler-conf={conf}", "--cache-dumper=false"]),
    ):
        health = free_port()
        process = plane.start_process(
            name,
            [
                str(plane.tools.volcano(name)),
                *common,
                *extra,
                f"--listen-address=127.0.0.1:{free_port()}",
                f"--healthz-address=127.0.0.1:{health}",
            ],
        )
        _wait_ready(process, f"http://127.0.0.1:{health}/healthz", timeout)
        started.append(process)
    queue = resource_path("scheduling.volcano.sh/v1beta1", "queues", name=VOLCANO_DEFAULT_QUEUE)
    clock = SystemClock()
    deadline = clock.monotonic() + timeout
    while True:
        try:
            plane.kube.get(queue)
            break
        except NotFound:
            if clock.monotonic() > deadline:
                raise ProcessError(f"vc-scheduler made no default queue in {timeout:g}s") from None
            clock.sleep(0.2)
    return started[0], started[1]


def volcano_job_defaults(job: JSON) -> JSON:
    """A copy of a Volcano Job with the defaults its admission webhook writes at creation (mutate_job.go):
    queue, schedulerName, maxRetry, task names, task minAvailable and maxRetry, job minAvailable."""
    job = copy.deepcopy(job)
    spec = job.setdefault("spec", {})
    spec.setdefault("queue", VOLCANO_DEFAULT_QUEUE)
    spec.setdefault("schedulerName", VOLCANO_SCHEDULER_NAME)
    if not spec.get("maxRetry"):
        spec["maxRetry"] = VOLCANO_DEFAULT_MAX_RETRY
    tasks = spec.setdefault("tasks", [])
    for index, task in enumerate(tasks):
        if not task.get("name"):
            task["name"] = f"default{index}"
        task.setdefault("minAvailable", task.get("replicas", 0))
        if not task.get("maxRetry"):
            task["maxRetry"] = VOLCANO_DEFAULT_MAX_RETRY
    if not spec.get("minAvailable"):
        spec["minAvailable"] = sum(int(task["minAvailable"]) for task in tasks)
    return job


def _wait_ready(process: Process, url: str, timeout: float) -> None:
    """Until `url` answers 200 (its own self-signed certificate: nothing secret crosses loopback here)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context))
    clock = SystemClock()
    deadline = clock.monotonic() + timeout
    while True:
        process.ensure_running()
        try:
            with opener.open(url, timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:  # refused, not ready (HTTP 500), reset
            pass
        if clock.monotonic() > deadline:
            raise ProcessError(f"{process.name} not ready at {url} after {timeout:g}s:\n{process.log_tail()}")
        clock.sleep(0.2)


def _established(crd: JSON) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
