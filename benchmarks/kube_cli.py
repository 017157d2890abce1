"""The CLI against a Kubernetes cluster: how long each verb takes, as a user runs it, beside kubectl.

A fresh control plane (`caldera.testing.kube`: etcd, kube-apiserver, KWOK; no controller manager)
with caldera's CRDs, the `default` queue, 20 KWOK nodes of 8 GPUs, and JOBS Volcano Jobs of 4 pods
each, the pods created bound to the nodes (KWOK runs them). Each figure is the wall time of the
whole command in a new process (`python -m caldera.cli.main --kubeconfig ...`, so Python's start and
caldera's imports are in it), the median of RUNS runs; `kubectl get vcjob -A` and `kubectl get pods
-A` on the same cluster are the reference for a listing.

    python benchmarks/kube_cli.py [--jobs 200] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import yaml

from caldera.backends.kube.client import JSON, resource_path
from caldera.testing.kube import ControlPlane, FakeNode, add_nodes, install_caldera_crds, running_cluster

NAMESPACE = "bench"
JOB_API = "batch.volcano.sh/v1alpha1"
NODES = 20
PODS_PER_JOB = 4


def job(name: str) -> JSON:
    container = {"name": "main", "image": "trainer:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    task = {"name": "worker", "replicas": PODS_PER_JOB, "template": {"spec": {"containers": [container]}}}
    return {"apiVersion": JOB_API, "kind": "Job", "metadata": {"name": name}, "spec": {"tasks": [task]}}


def pod(stored: JSON, index: int, node: str) -> JSON:
    meta = stored["metadata"]
    labels = {
        "volcano.sh/job-name": meta["name"],
        "volcano.sh/task-spec": "worker",
        "volcano.sh/task-index": str(index),
    }
    owner = {"apiVersion": JOB_API, "kind": "Job", "name": meta["name"], "uid": meta["uid"], "controller": True}
    spec = {**stored["spec"]["tasks"][0]["template"]["spec"], "nodeName": node, "restartPolicy": "Never"}
    return {
        "metadata": {"name": f"{meta['name']}-worker-{index}", "labels": labels, "ownerReferences": [owner]},
        "spec": spec,
    }


def populate(plane: ControlPlane, jobs: int) -> None:
    install_caldera_crds(plane)
    plane.kube.create(resource_path("scheduling.volcano.sh/v1beta1", "queues"),
                      {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"}})  # fmt: skip
    add_nodes(plane, [FakeNode(f"n{i}", cpu="64", memory="512Gi", gpus=8) for i in range(NODES)])
    plane.create_namespace(NAMESPACE)
    jobs_path = resource_path(JOB_API, "jobs", namespace=NAMESPACE)
    pods_path = resource_path("v1", "pods", namespace=NAMESPACE)

    def one(i: int) -> None:
        stored = plane.kube.create(jobs_path, job(f"train-{i:04d}"))
        for k in range(PODS_PER_JOB):
            plane.kube.create(pods_path, pod(stored, k, f"n{(i * PODS_PER_JOB + k) % NODES}"))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(jobs)))


def timed(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
        times.append(time.monotonic() - start)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed: {done.stderr}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with running_cluster(controller_manager=False) as plane:
        populate(plane, args.jobs)
        caldera = [sys.executable, "-m", "caldera.cli.main", "--kubeconfig", str(plane.kubeconfig)]
        kubectl = [str(plane.tools.binary("kubectl")), "--kubeconfig", str(plane.kubeconfig)]
        middle = f"train-{args.jobs // 2:04d}"
        manifest = plane.directory / "one.yaml"
        cases = [
            ("caldera --version (Python start and imports only)", [*caldera, "--version"]),
            (f"caldera list -A ({args.jobs} jobs, {args.jobs * PODS_PER_JOB} pods)", [*caldera, "list", "-A"]),
            ("kubectl get vcjob -A", [*kubectl, "get", "vcjob", "-A"]),
            ("kubectl get pods -A", [*kubectl, "get", "pods", "-A"]),
            ("caldera get JOB", [*caldera, "get", middle, "-n", NAMESPACE]),
            ("caldera describe JOB", [*caldera, "describe", middle, "-n", NAMESPACE]),
            (f"caldera top node ({NODES} nodes)", [*caldera, "top", "node"]),
            ("caldera queue list", [*caldera, "queue", "list"]),
        ]
        print(f"{'command':<58} median of {args.runs} (s)")
        for title, command in cases:
            print(f"{title:<58} {timed(command, args.runs):.3f}", flush=True)
        applies = []
        for i in range(args.runs):
            doc = job(f"new-{i}")
            doc["metadata"]["namespace"] = NAMESPACE
            manifest.write_text(yaml.safe_dump(doc))
            applies.append(timed([*caldera, "apply", "-f", str(manifest)], 1))
        print(f"{'caldera apply -f (a new job)':<58} {statistics.median(applies):.3f}")


if __name__ == "__main__":
    main()
