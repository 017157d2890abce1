"""Schedulers on the same real control plane: how fast each binds the same workload on the same fake cluster.

For every cluster size, workload and contender, a fresh control plane (`caldera.testing.kube`:
etcd, kube-apiserver, KWOK; no controller manager) with N KWOK nodes of 32 CPUs, 256 GiB,
8 GPUs and 110 pods each. Workloads (every pod asks for 1 CPU and 1 GiB, and runs until the end):

- pods:  10,000 single-pod jobs;
- gangs: 150 gangs of 64 pods (9,600 pods).

Contenders:

- kube-scheduler (default profile, client QPS 5,000 / burst 10,000 instead of 50 / 100): the
  workload as plain pods (it has no gangs: a "gang" is 64 pods with one label);
- volcano: vc-controller-manager + vc-scheduler (Helm default configuration, no webhook): the
  workload as Volcano Jobs (one task; a gang's minAvailable is 64) with the webhook's defaults
  written in (`volcano_job_defaults`); needs Volcano's binaries (docs/kubernetes-harness.md);
- caldera: `caldera controller` (its job controller and scheduler in one process, leader election on):
  the same Volcano Jobs as Volcano's, on Volcano's CRDs. It creates each pod already bound when it
  placed it before creating it, so a pod's binding time is its creationTimestamp;
- caldera-pods: `caldera controller` on kube-scheduler's workload, the plain pods naming caldera's
  schedulerName, as another operator writes them: a gang's pods name a PodGroup of minMember 64 made
  with them; a single pod names none, and caldera makes its PodGroup (`podgroup-<uid>`), as Volcano's
  controller does. Scheduler against scheduler on the same pods.

Created before timing starts: the control plane, the N Ready nodes, and the workload's objects
(kube-scheduler: the pods; Volcano: its CRDs, the default queue and the Jobs; caldera: Volcano's CRDs
and the Jobs, its default queue it makes itself; caldera-pods: Volcano's CRDs, the PodGroups and pods). Timing starts when
the contender's processes are started, so it includes their start-up and first sync, and ends when
every pod is bound (a watch on the pods sees it). Figures:

- pods bound per second: pods ÷ (last binding − start); a pod's binding time is its PodScheduled
  condition's lastTransitionTime, which the API server sets at binding (or its creationTimestamp if it
  was created bound). These times have 1-second resolution;
- all bound: last binding − start (s);
- gang p50 / p99: per job (a gang, or a single pod), its last pod's binding − start (every job
  exists at the start);
- CPU: user + system seconds of the contender's processes over the run (Volcano: both);
- API CPU: user + system seconds of kube-apiserver and etcd over the same span: what the contender's requests
  (and the watches they feed) cost the control plane, which shares the machine's cores with the contender;
- first bound: when the watch first saw a pod bound (s after the start, the client's clock): the contender's
  start-up and first sync;
- caldera's API writes per job, by verb and resource (the counts its client logs when it stops, once every Job's
  status says Running and its events stopped coming; the probes' jobs counted in, lease renewals left out), printed under the table, with when
  every Job's status said Running (the statuses are written after the pods);
- new job → bound p50 / max: then, with the contender idle and the workload's pods still running,
  `PROBES` more jobs of the workload's size, one after the other: from just before the Job is created
  (kube-scheduler: before its pods are created, 16 at a time) to when the watch sees the last of its
  pods bound (the client's clock, not the API server's 1-second stamps). This is the latency a user
  sees when submitting to a running cluster; the figures above are a burst's throughput.

    python benchmarks/kube_schedulers.py [--nodes 1000,5000] [--workloads pods,gangs]
        [--contenders kube-scheduler,volcano,caldera] [--scale 1.0]

`--scale 0.1` runs a tenth of every workload (and of the nodes), to try it out quickly.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from caldera.backends.kube.client import JSON, Gone, resource_path
from caldera.system.kubernetes import API_REQUESTS
from caldera.testing.kube import (
    ControlPlane,
    FakeNode,
    Process,
    add_nodes,
    find_tools,
    install_volcano_crds,
    running_cluster,
    start_kube_scheduler,
    start_volcano,
    volcano_job_defaults,
)
from caldera.testing.kube.calderactl import start_caldera

NAMESPACE = "bench"
PODS = resource_path("v1", "pods", namespace=NAMESPACE)
VOLCANO_JOBS = resource_path("batch.volcano.sh/v1alpha1", "jobs", namespace=NAMESPACE)
QUEUES = resource_path("scheduling.volcano.sh/v1beta1", "queues")
PODGROUPS = resource_path("scheduling.volcano.sh/v1beta1", "podgroups", namespace=NAMESPACE)
WORKLOADS = {"pods": (10_000, 1), "gangs": (150, 64)}  # jobs, pods per job
TIMEOUT = 3600.0
PROBES = 10  # jobs created one by one after the workload, for the new job → bound latency


@dataclass(frozen=True, slots=True)
class Result:
    nodes: int
    workload: str
    contender: str
    pods: int
    pods_per_second: float
    all_bound: float
    job_p50: float
    job_p99: float
    cpu: float
    api_cpu: float  # kube-apiserver + etcd over the run
    first_bound: float
    probe_p50: float
    probe_max: float
    writes: dict[str, int]  # caldera: its API writes over the run (lease renewals left out), by "VERB resource"
    statuses: float  # when every Job's status said Running (s after the start; not kube-scheduler)


def container() -> JSON:
    return {"name": "main", "image": "trainer:1", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}


def plain_pod(job: int | str, index: int, scheduler: str = "", size: int = 1) -> JSON:
    """A pod of the workload; with `scheduler` (caldera's), a gang's pods name their PodGroup (`podgroup`), as
    another operator's would."""
    name = job if isinstance(job, str) else f"job{job}"
    pod: JSON = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{name}-{index}", "labels": {"bench-job": name}},
        "spec": {"restartPolicy": "Never", "containers": [container()]},
    }
    if scheduler:
        pod["spec"]["schedulerName"] = scheduler
        if size > 1:
            pod["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": name}
    return pod


def podgroup(job: int | str, size: int) -> JSON:
    name = job if isinstance(job, str) else f"job{job}"
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"minMember": size}}  # fmt: skip


def create_operator_pods(plane: ControlPlane, jobs: Iterable[int | str], size: int) -> None:
    """The workload as another operator writes it for caldera: plain pods naming its schedulerName, each gang's
    PodGroup first (a single pod names none: caldera makes its group, as Volcano's controller does)."""
    jobs = list(jobs)
    if size > 1:
        create_all(plane, PODGROUPS, (podgroup(j, size) for j in jobs))
    create_all(plane, PODS, (plain_pod(j, i, "caldera", size) for j in jobs for i in range(size)))


def volcano_job(job: int | str, size: int) -> JSON:
    name = job if isinstance(job, str) else f"job{job}"
    template = {
        "metadata": {"labels": {"bench-job": name}},
        "spec": {"restartPolicy": "Never", "containers": [container()]},
    }
    manifest = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"minAvailable": size, "tasks": [{"name": "w", "replicas": size, "template": template}]},
    }
    return volcano_job_defaults(manifest)


def create_all(plane: ControlPlane, path: str, objects: Iterable[JSON]) -> None:
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda obj: plane.kube.create(path, obj), objects))


def prepare_kube_scheduler(plane: ControlPlane, jobs: int, size: int) -> Callable[[], list[Process]]:
    create_all(plane, PODS, (plain_pod(j, i) for j in range(jobs) for i in range(size)))
    return lambda: [start_kube_scheduler(plane)]


def prepare_volcano(plane: ControlPlane, jobs: int, size: int) -> Callable[[], list[Process]]:
    install_volcano_crds(plane)
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
             "spec": {"weight": 1, "reclaimable": True}}  # fmt: skip
    plane.kube.create(QUEUES, queue)
    create_all(plane, VOLCANO_JOBS, (volcano_job(j, size) for j in range(jobs)))
    return lambda: list(start_volcano(plane))


def prepare_caldera(plane: ControlPlane, jobs: int, size: int) -> Callable[[], list[Process]]:
    """The same Volcano Jobs as Volcano's (Volcano's CRDs, its webhook's defaults written in), for `caldera controller`."""
    install_volcano_crds(plane)
    create_all(plane, VOLCANO_JOBS, (volcano_job(j, size) for j in range(jobs)))
    return lambda: [start_caldera(plane)]


def prepare_caldera_pods(plane: ControlPlane, jobs: int, size: int) -> Callable[[], list[Process]]:
    """kube-scheduler's workload of plain pods, naming caldera's schedulerName (and a PodGroup for a gang)."""
    install_volcano_crds(plane)
    create_operator_pods(plane, range(jobs), size)
    return lambda: [start_caldera(plane)]


CONTENDERS: dict[str, Callable[[ControlPlane, int, int], Callable[[], list[Process]]]] = {
    "kube-scheduler": prepare_kube_scheduler,
    "volcano": prepare_volcano,
    "caldera": prepare_caldera,
    "caldera-pods": prepare_caldera_pods,
}


class BindWatch:
    """Counts the workload's bound pods from a watch, and says when there are `total`; notes when each
    pod was first seen bound, by job (its `bench-job` label)."""

    def __init__(self, plane: ControlPlane, total: int) -> None:
        self.plane, self.total = plane, total
        self.bound: set[str] = set()
        self.by_job: dict[str, list[float]] = {}  # job → when each of its pods was seen bound
        self.changed = threading.Condition()
        self.done = threading.Event()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        _, self._version = plane.kube.list_all(PODS)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    for kind, pod in self.plane.kube.watch(PODS, resource_version=self._version, timeout_seconds=30):
                        self._version = pod["metadata"]["resourceVersion"]
                        if kind in ("ADDED", "MODIFIED"):
                            self._seen(pod)
                except Gone:  # the version was compacted away under load: list again, watch from there
                    items, self._version = self.plane.kube.list_all(PODS)
                    for pod in items:
                        self._seen(pod)
        except Exception as e:  # the run fails with it, not silently
            self.error = e
            self.done.set()
            with self.changed:
                self.changed.notify_all()

    def _seen(self, pod: JSON) -> None:
        name = pod["metadata"]["name"]
        if not pod["spec"].get("nodeName") or name in self.bound:
            return
        with self.changed:
            self.bound.add(name)
            job = (pod["metadata"].get("labels") or {}).get("bench-job", "")
            self.by_job.setdefault(job, []).append(time.time())
            self.changed.notify_all()
        if len(self.bound) >= self.total:
            self.done.set()

    def all_bound(self, job: str, size: int, timeout: float) -> float:
        """When the last of `job`'s `size` pods was seen bound (time.time())."""
        with self.changed:
            if not self.changed.wait_for(lambda: len(self.by_job.get(job, ())) >= size or self.error, timeout):
                raise SystemExit(f"{job}: {len(self.by_job.get(job, ()))} of {size} pods bound in {timeout:g}s")
            if self.error is not None:
                raise SystemExit(f"{job}: {self.error}")
            return max(self.by_job[job][:size])

    def stop(self) -> None:
        self._stop.set()


def bind_time(pod: JSON) -> float:
    for condition in pod["status"].get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition["status"] == "True":
            return stamp(condition["lastTransitionTime"])
    return stamp(pod["metadata"]["creationTimestamp"])


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def run(nodes: int, workload: str, contender: str, scale: float) -> Result:
    jobs, size = WORKLOADS[workload]
    jobs = max(1, round(jobs * scale))
    total = jobs * size
    with running_cluster(controller_manager=False) as plane:
        add_nodes(plane, [FakeNode(f"node-{i}", cpu="32", memory="256Gi", gpus=8) for i in range(nodes)], timeout=1800)
        plane.create_namespace(NAMESPACE)
        start = CONTENDERS[contender](plane, jobs, size)
        watch = BindWatch(plane, total)
        api = [plane.processes["kube-apiserver"], plane.processes["etcd"]]
        api_cpu0 = sum(p.cpu_seconds() for p in api)
        t0 = time.time()
        processes = start()
        if not watch.done.wait(TIMEOUT) or watch.error is not None:
            raise SystemExit(f"{contender}: {len(watch.bound)} of {total} pods bound ({watch.error or 'timed out'})")
        cpu = sum(p.cpu_seconds() for p in processes)
        api_cpu = sum(p.cpu_seconds() for p in api) - api_cpu0
        with watch.changed:
            first = min(min(seen) for seen in watch.by_job.values()) - t0
        probes = [probe(plane, watch, contender, f"probe{i}", size) for i in range(PROBES)]
        watch.stop()
        statuses = jobs_running(plane) - t0 if contender in ("volcano", "caldera") else 0.0
        if contender.startswith("caldera"):
            events_written(plane)
        writes = caldera_writes(processes[0]) if contender.startswith("caldera") else {}
        pods = [p for p in plane.kube.list_all(PODS)[0] if p["metadata"]["labels"]["bench-job"].startswith("job")]
    binds = [bind_time(p) - t0 for p in pods]
    per_job: dict[str, float] = {}
    for pod, at in zip(pods, binds, strict=True):
        job = pod["metadata"]["labels"]["bench-job"]
        per_job[job] = max(per_job.get(job, 0.0), at)
    last = max(binds)
    latencies = sorted(per_job.values())
    return Result(
        nodes, workload, contender, total, total / last if last > 0 else float("inf"), last,
        statistics.median(latencies), latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))], cpu,
        api_cpu, first, statistics.median(probes), max(probes), writes, statuses,
    )  # fmt: skip


def jobs_running(plane: ControlPlane) -> float:
    """When every Job's status says Running (time.time()): the job statuses are written after the pods (caldera's
    writes are counted after that, so that none is cut by its stop)."""
    pause = threading.Event()
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        jobs = plane.kube.list_all(VOLCANO_JOBS, resource_version="0")[0]
        if all(((j.get("status") or {}).get("state") or {}).get("phase") == "Running" for j in jobs):
            return time.time()
        pause.wait(0.5)
    raise SystemExit("the Jobs' statuses did not all say Running")


def events_written(plane: ControlPlane, quiet: float = 3.0) -> None:
    """Wait until caldera's events stop coming (none new for `quiet` seconds): it writes them after the pods and
    statuses, so that its writes are counted whole."""
    pause = threading.Event()
    path = resource_path("v1", "events", namespace=NAMESPACE)
    count, since, deadline = -1, time.time(), time.time() + TIMEOUT
    while time.time() < deadline:
        events = plane.kube.list_all(path, resource_version="0")[0]
        now = sum(1 for e in events if (e.get("source") or {}).get("component") == "caldera")
        if now != count:
            count, since = now, time.time()
        elif time.time() - since >= quiet:
            return
        pause.wait(0.5)


def caldera_writes(process: Process) -> dict[str, int]:
    """The writes `caldera controller` sent, from the counts it logs when it stops (stopped here)."""
    process.stop()
    for line in reversed(process.log_file.read_text(errors="replace").splitlines()):
        if API_REQUESTS in line:
            counts: dict[str, int] = json.loads(line.split(API_REQUESTS, 1)[1])
            return {k: v for k, v in counts.items() if not k.startswith("GET") and not k.endswith("leases")}
    raise SystemExit(f"caldera controller logged no request counts:\n{process.log_tail()}")


def probe(plane: ControlPlane, watch: BindWatch, contender: str, name: str, size: int) -> float:
    """Seconds from creating one more job (kube-scheduler: its pods) to all of its pods bound."""
    t0 = time.time()
    if contender == "kube-scheduler":
        create_all(plane, PODS, (plain_pod(name, i) for i in range(size)))
    elif contender == "caldera-pods":
        create_operator_pods(plane, [name], size)
    else:
        plane.kube.create(VOLCANO_JOBS, volcano_job(name, size))
    return watch.all_bound(name, size, TIMEOUT) - t0


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: every control plane is stopped and removed
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1000,5000")
    parser.add_argument("--workloads", default="pods,gangs")
    parser.add_argument("--contenders", default="kube-scheduler,volcano,caldera")
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    contenders = args.contenders.split(",")
    if "volcano" in contenders and not find_tools().has_volcano():
        print("volcano: left out, its binaries are not built (docs/kubernetes-harness.md, Volcano)")
        contenders.remove("volcano")
    print(
        "| nodes | workload | contender | pods | pods bound/s | first / all bound (s) | job p50 / p99 (s) | CPU (s) "
        "| API CPU (s) | new job → bound p50 / max (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    notes: list[str] = []
    for nodes in (max(1, round(int(n) * args.scale)) for n in args.nodes.split(",")):
        for workload in args.workloads.split(","):
            for contender in contenders:
                r = run(nodes, workload, contender, args.scale)
                print(
                    f"| {r.nodes:,} | {r.workload} | {r.contender} | {r.pods:,} | {r.pods_per_second:,.0f} | "
                    f"{r.first_bound:.1f} / {r.all_bound:.0f} | {r.job_p50:.0f} / {r.job_p99:.0f} | {r.cpu:.1f} | {r.api_cpu:.1f} | "
                    f"{r.probe_p50:.2f} / {r.probe_max:.2f} |",
                    flush=True,
                )
                if r.writes:
                    jobs = r.pods // WORKLOADS[workload][1] + PROBES
                    detail = ", ".join(f"{k} {v / jobs:.2f}" for k, v in sorted(r.writes.items()))
                    notes.append(
                        f"- {r.nodes:,} nodes, {workload}: caldera's API writes per job "
                        f"{sum(r.writes.values()) / jobs:.2f} ({detail}; lease renewals left out); every Job's "
                        f"status Running {r.statuses:.0f} s after the start"
                    )
    print("\n".join(["", *notes]) if notes else "", flush=True)


if __name__ == "__main__":
    main()
