"""What each kind of write costs the API server: kube-apiserver + etcd CPU per request, on Volcano's CRDs.

A single-pod Volcano Job costs caldera a PodGroup, a pod (created bound), the Job's status and two
events; kube-scheduler's plain pod costs a binding and an event (its pod exists before its clock). On
a 2-core machine the API server is the bottleneck of both, so these per-request costs bound how fast
each can go. One fresh control plane (etcd, kube-apiserver, no KWOK: no kubelet writes), Volcano's
CRDs, `N` objects of each kind written 8 at a time, in the order a controller writes them; the CPU
seconds of kube-apiserver and etcd (from /proc) over each batch, divided by `N`. The idle rate (the
server's own work with nothing asked, per second) is printed first: subtract it × the batch's time if
that matters.

`--crds caldera` installs caldera's own CRDs (`caldera kube manifests`: the same groups, versions and shapes,
a 12 KB Job schema whose pod template is left free) instead of Volcano's (a 228 KB Job schema, every pod
field spelled out); `--crds free` caldera's with a Job schema that checks nothing
(`x-kubernetes-preserve-unknown-fields`): the floor of what a Job write costs whatever its schema.

    python benchmarks/kube_api_costs.py [--objects 300] [--crds volcano|caldera|free]
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

from caldera.backends.kube.client import JSON, KubeError, resource_path
from caldera.testing.kube import ControlPlane, install_volcano_crds, running_cluster
from caldera.testing.kube.crds import CRDS, install_caldera_crds
from kube_schedulers import NAMESPACE, PODS, VOLCANO_JOBS, plain_pod, volcano_job  # beside this file

PODGROUPS = resource_path("scheduling.volcano.sh/v1beta1", "podgroups", namespace=NAMESPACE)
EVENTS = resource_path("v1", "events", namespace=NAMESPACE)
STAMP = "2026-11-28T00:00:00Z"


def install_free_job_crd(plane: ControlPlane) -> None:
    """caldera's CRDs, then its Job CRD's schema replaced by one that checks nothing; returns once it is served."""
    install_caldera_crds(plane)
    path = f"{CRDS}/jobs.batch.volcano.sh"
    crd = plane.kube.get(path)
    for version in crd["spec"]["versions"]:
        version["schema"] = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
        version.pop("additionalPrinterColumns", None)
    plane.kube.replace(path, crd)
    probe = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "schema-probe"}}
    for _ in range(600):  # a Job without tasks is refused until the new schema is served
        try:
            plane.kube.create(VOLCANO_JOBS, probe)
            plane.kube.delete(f"{VOLCANO_JOBS}/schema-probe")
            return
        except KubeError:
            threading.Event().wait(0.1)
    raise SystemExit("the schema-free Job CRD was not served within 60 s")


def api_cpu(plane: ControlPlane) -> float:
    return sum(plane.processes[name].cpu_seconds() for name in ("kube-apiserver", "etcd"))


def podgroup(i: int) -> JSON:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": f"job{i}", "namespace": NAMESPACE},
        "spec": {"minMember": 1, "queue": "default", "minResources": {"cpu": "1", "memory": "1Gi"}},
        "status": {"phase": "Running", "running": 0},
    }


def pod(i: int, node: str) -> JSON:
    body = plain_pod(f"{'bound' if node else 'unbound'}{i}", 0)
    body["metadata"]["namespace"] = NAMESPACE
    if node:
        body["spec"]["nodeName"] = node
    return body


def binding(i: int) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": f"unbound{i}-0", "namespace": NAMESPACE},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-0"},
    }


def job_status(running: int) -> JSON:
    state = {"phase": "Running", "reason": "", "message": "", "lastTransitionTime": STAMP}
    return {
        "status": {
            "state": state,
            "minAvailable": 1,
            "running": running,
            "pending": 0,
            "succeeded": 0,
            "failed": 0,
            "conditions": [{"status": "Running", "lastTransitionTime": STAMP}],
            "taskStatusCount": {"w": {"phase": {"Running": running}}},
        }
    }


def event(i: int) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"bound{i}-0.scheduled", "namespace": NAMESPACE},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": NAMESPACE, "name": f"bound{i}-0"},
        "reason": "Scheduled",
        "message": f"Successfully assigned {NAMESPACE}/bound{i}-0 to node-0",
        "type": "Normal",
        "source": {"component": "caldera"},
        "firstTimestamp": STAMP,
        "lastTimestamp": STAMP,
        "count": 1,
    }


INSTALL: dict[str, Callable[[ControlPlane], object]] = {
    "volcano": install_volcano_crds,
    "caldera": install_caldera_crds,
    "free": install_free_job_crd,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=300)
    parser.add_argument("--crds", choices=tuple(INSTALL), default="volcano", help="whose CRDs (same API)")
    args = parser.parse_args()
    n = args.objects
    with running_cluster(controller_manager=False, kwok=False) as plane, ThreadPoolExecutor(8) as pool:
        plane.create_namespace(NAMESPACE)
        INSTALL[args.crds](plane)
        kube = plane.kube

        def measure(what: str, write: Callable[[int], object], items: Iterable[int] = range(n)) -> None:
            before, t0 = api_cpu(plane), time.time()
            done = list(pool.map(write, items))
            cost = (api_cpu(plane) - before) / len(done)
            print(f"| {what} | {cost * 1000:.2f} | {time.time() - t0:.1f} |", flush=True)

        before = api_cpu(plane)
        threading.Event().wait(5.0)
        print(f"idle: {(api_cpu(plane) - before) / 5 * 1000:.0f} ms of API server CPU per second\n")
        print("| request | API server CPU per request (ms) | batch wall (s) |\n|---|---|---|")
        measure("POST jobs (the workload, before any clock)", lambda i: kube.create(VOLCANO_JOBS, volcano_job(i, 1)))
        measure("POST podgroups", lambda i: kube.create(PODGROUPS, podgroup(i)))
        measure("POST pods, created bound (caldera)", lambda i: kube.create(PODS, pod(i, "node-0")))
        measure("POST pods, unbound (before kube-scheduler's clock)", lambda i: kube.create(PODS, pod(i, "")))
        measure("POST pods/binding (kube-scheduler)", lambda i: kube.create(f"{PODS}/unbound{i}-0/binding", binding(i)))
        measure("PATCH jobs/status (merge)", lambda i: kube.patch(f"{VOLCANO_JOBS}/job{i}/status", job_status(1)))
        jobs = {j["metadata"]["name"]: j for j in kube.list_all(VOLCANO_JOBS)[0]}  # as an informer holds them
        measure(
            "PUT jobs/status (the object as listed, its new status)",
            lambda i: kube.replace(f"{VOLCANO_JOBS}/job{i}/status", {**jobs[f"job{i}"], **job_status(2)}),
        )
        measure(
            "PATCH jobs/status (JSON patch: replace /status)",
            lambda i: kube.patch(
                f"{VOLCANO_JOBS}/job{i}/status",
                [{"op": "replace", "path": "/status", "value": job_status(3)["status"]}],
                kind="json",
            ),
        )
        measure("POST events", lambda i: kube.create(EVENTS, event(i)))
        pg_status = {"status": {"phase": "Running", "running": 1}}
        measure("PATCH podgroups (status, with the object)", lambda i: kube.patch(f"{PODGROUPS}/job{i}", pg_status))
        for name, version in (("consistent (from etcd)", None), ("resourceVersion=0 (watch cache)", "0")):
            before = api_cpu(plane)
            listed = len(kube.list_all(VOLCANO_JOBS, resource_version=version)[0])
            print(f"| LIST jobs, {name}, per Job listed | {(api_cpu(plane) - before) / listed * 1000:.2f} | — |")


if __name__ == "__main__":
    main()
