"""Pods placed per second by `caldera simulate`, the whole command as a user runs it (issue 12's benchmark).

The cluster file declares 5,000 nodes (64 CPU, 512Gi, 8 GPUs each); the workload
file (JSON, as a program would write it) submits 6,400 pods at time 0: 6,400
single-pod Volcano Jobs, or 100 gangs of 64 pods (minAvailable 64), one GPU,
4 CPUs and 32Gi per pod, each running an hour. The command is

    caldera simulate --cluster C.yaml --workload W.json --until 5 -o json

run as a fresh process; its JSON report is parsed to count the pods that
started. "start-up" is the same command on the same cluster with an empty
workload (the interpreter, the imports, the cluster file and the 5,000-node
state); "pods/s" = pods started / (whole command − start-up), in wall time and,
for a shared machine, in the command's CPU time. Every figure is the median of
`--repeat` runs.

    python benchmarks/simulate_throughput.py [--nodes 5000] [--pods 6400] [--gangs 1,64] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

POD = {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"}


def cluster_yaml(nodes: int) -> str:
    return (
        f"nodes:\n  - {{name: node, count: {nodes}, allocatable: {{cpu: '64', memory: 512Gi, nvidia.com/gpu: '8'}}}}\n"
    )


def workload(pods: int, gang: int) -> dict[str, Any]:
    def job(j: int) -> dict[str, Any]:
        return {
            "submitTime": 0,
            "duration": 3600,
            "manifest": {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "metadata": {"name": f"job-{j:05d}"},
                "spec": {
                    "minAvailable": gang,
                    "schedulerName": "volcano",
                    "tasks": [
                        {
                            "name": "worker",
                            "replicas": gang,
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [
                                        {"name": "train", "image": "train:1", "resources": {"requests": POD}}
                                    ],
                                }
                            },
                        }
                    ],
                },
            },
        }

    return {"jobs": [job(j) for j in range(pods // gang)]}


def run(cluster: Path, work: Path) -> tuple[float, float, int]:
    """(seconds of the whole command, its CPU seconds, pods that started)."""
    command = [sys.executable, "-m", "caldera.cli.main", "simulate", "--cluster", str(cluster)]
    command += ["--workload", str(work), "--until", "5", "-o", "json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    report = json.loads(out)
    return elapsed, cpu, sum(1 for p in report["pods"] if p["startTime"] is not None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=6400)
    parser.add_argument("--gangs", default="1,64", help="pods per job, one case each")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        cluster = d / "cluster.yaml"
        cluster.write_text(cluster_yaml(args.nodes))
        empty = d / "empty.json"
        empty.write_text(json.dumps({"jobs": []}))
        empties = [run(cluster, empty) for _ in range(args.repeat)]
        startup = statistics.median(t for t, _, _ in empties)
        startup_cpu = statistics.median(c for _, c, _ in empties)
        print(f"{args.nodes:,} nodes; start-up (empty workload): {startup:.2f} s ({startup_cpu:.2f} CPU s)")
        print(f"{'gang':>5} {'pods started':>12} {'command s':>10} {'pods/s beyond start-up':>23} {'(by CPU s)':>11}")
        for gang in (int(g) for g in args.gangs.split(",")):
            work = d / f"workload-{gang}.json"
            work.write_text(json.dumps(workload(args.pods, gang)))
            runs = [run(cluster, work) for _ in range(args.repeat)]
            whole = statistics.median(t for t, _, _ in runs)
            cpu = statistics.median(c for _, c, _ in runs)
            started = runs[-1][2]
            rate = started / max(whole - startup, 1e-9)
            cpu_rate = started / max(cpu - startup_cpu, 1e-9)
            print(f"{gang:>5} {started:>12,} {whole:>10.2f} {rate:>23,.0f} {cpu_rate:>11,.0f}", flush=True)


if __name__ == "__main__":
    main()
