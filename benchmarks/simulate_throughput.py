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

`--baseline DIR` also runs the command from another checkout's sources (DIR is its
`src`, put first on PYTHONPATH), alternating with this one's run by run, so that a
shared machine's load weighs on both alike: the last column is the speed-up.

    python benchmarks/simulate_throughput.py [--nodes 5000] [--pods 6400] [--gangs 1,64] [--repeat 3] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
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


def run(cluster: Path, work: Path, src: str | None = None) -> tuple[float, float, int]:
    """(seconds of the whole command, its CPU seconds, pods that started); `src`: sources to run instead."""
    command = [sys.executable, "-m", "caldera.cli.main", "simulate", "--cluster", str(cluster)]
    command += ["--workload", str(work), "--until", "5", "-o", "json"]
    env = None
    if src is not None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    report = json.loads(out)
    return elapsed, cpu, sum(1 for p in report["pods"] if p["startTime"] is not None)


class Case:
    """The medians of one workload's runs, beyond the start-up measured with the same sources."""

    def __init__(self, runs: list[tuple[float, float, int]], startup: tuple[float, float]) -> None:
        self.whole = statistics.median(t for t, _, _ in runs)
        self.cpu = statistics.median(c for _, c, _ in runs)
        self.started = runs[-1][2]
        self.rate = self.started / max(self.whole - startup[0], 1e-9)
        self.cpu_rate = self.started / max(self.cpu - startup[1], 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=6400)
    parser.add_argument("--gangs", default="1,64", help="pods per job, one case each")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", help="another checkout's src directory, run alternately for comparison")
    args = parser.parse_args()
    sources: list[str | None] = [None] if args.baseline is None else [args.baseline, None]
    names = {src: "this tree" if src is None else "baseline" for src in sources}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        cluster = d / "cluster.yaml"
        cluster.write_text(cluster_yaml(args.nodes))
        empty = d / "empty.json"
        empty.write_text(json.dumps({"jobs": []}))
        startups: dict[str | None, tuple[float, float]] = {}
        empties: dict[str | None, list[tuple[float, float, int]]] = {s: [] for s in sources}
        for _ in range(args.repeat):
            for src in sources:
                empties[src].append(run(cluster, empty, src))
        for src in sources:
            startups[src] = (
                statistics.median(t for t, _, _ in empties[src]),
                statistics.median(c for _, c, _ in empties[src]),
            )
            wall, cpu = startups[src]
            print(f"{args.nodes:,} nodes, {names[src]}: start-up (empty workload) {wall:.2f} s ({cpu:.2f} CPU s)")
        print(
            f"{'gang':>5} {'sources':>10} {'pods started':>12} {'command s':>10} {'pods/s beyond start-up':>23}"
            f" {'(by CPU s)':>11}" + (f" {'speed-up (CPU)':>15}" if args.baseline else "")
        )
        for gang in (int(g) for g in args.gangs.split(",")):
            work = d / f"workload-{gang}.json"
            work.write_text(json.dumps(workload(args.pods, gang)))
            runs: dict[str | None, list[tuple[float, float, int]]] = {s: [] for s in sources}
            for _ in range(args.repeat):
                for src in sources:
                    runs[src].append(run(cluster, work, src))
            cases = {src: Case(runs[src], startups[src]) for src in sources}
            for src, c in cases.items():
                line = f"{gang:>5} {names[src]:>10} {c.started:>12,} {c.whole:>10.2f} {c.rate:>23,.0f} {c.cpu_rate:>11,.0f}"
                if args.baseline and src is None:
                    line += f" {c.cpu_rate / cases[args.baseline].cpu_rate:>14.2f}x"
                print(line, flush=True)


if __name__ == "__main__":
    main()
