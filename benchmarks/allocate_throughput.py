"""Placement decisions per second of the allocate action (issue 2's benchmark).

Nodes have 8 GPUs, 64 CPUs and 512Gi each. A queue of gang jobs (1, 8 or 64
one-GPU pods each, minAvailable = all) waits Inqueue; one scheduling cycle with
Volcano's plugin tiers (`--config volcano-shape`, the built-in configuration before
caldera-default, scheduler/config.py VOLCANO_SHAPE_CONFIG: the figures stay comparable)
or a shipped policy's (`--config caldera-default`, the built-in one now) and only
the `allocate` action places them. Decisions
per second = pods bound / wall time of the cycle (session open and close
included); "CPU ms per gang" is the cycle's CPU time (`time.process_time`) per gang,
what a shared machine's load does not stretch. Each case runs `--repeat` times on a
fresh state; the median is shown.

    python benchmarks/allocate_throughput.py [--nodes 1000,5000,10000] [--repeat 5] [--config NAME]
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

from caldera.core import objects as o
from caldera.core.errors import CalderaError
from caldera.scheduler.config import volcano_shape_config
from caldera.scheduler.policies import load_policy
from caldera.scheduler.scheduler import Scheduler
from caldera.scheduler.state import ClusterState
from caldera.testing.builders import make_node, make_pod, make_podgroup

NODE = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}
POD = {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"}


def build(nodes: int, gang: int, pods: int) -> ClusterState:
    state = ClusterState()
    state.set_nodes([make_node(f"node-{i:05d}", resources=NODE) for i in range(nodes)])
    for j in range(pods // gang):
        pg = make_podgroup(f"job-{j:05d}", min_member=gang, phase=o.PG_INQUEUE, created=float(j))
        state.set_podgroup(pg)
        for i in range(gang):
            state.set_pod(make_pod(f"job-{j:05d}", "worker", i, requests=POD, created=float(j)), pg.key)
    return state


def allocate_only(name: str) -> Scheduler:
    """The configuration `name` (`volcano-shape` or a shipped policy) with `allocate` as its only action."""
    config = volcano_shape_config() if name == "volcano-shape" else load_policy(name)
    return Scheduler(replace(config, actions=("allocate",)))


def measure(nodes: int, gang: int, pods: int, repeat: int, name: str) -> tuple[float, float, float, int]:
    """(median decisions/s, median ms per gang, median CPU ms per gang, pods bound) over `repeat` runs."""
    rates, per_gang, cpu_per_gang = [], [], []
    bound = 0
    scheduler = allocate_only(name)
    for _ in range(repeat):
        state = build(nodes, gang, pods)
        start, start_cpu = time.perf_counter(), time.process_time()
        result = scheduler.run_cycle(state, now=0.0)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        bound = len(result.binds)
        gangs = max(bound // gang, 1)
        rates.append(bound / elapsed)
        per_gang.append(elapsed / gangs * 1000)
        cpu_per_gang.append(cpu / gangs * 1000)
    return statistics.median(rates), statistics.median(per_gang), statistics.median(cpu_per_gang), bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1000,5000,10000")
    parser.add_argument("--gangs", default="1,8,64")
    parser.add_argument("--pods", type=int, default=2048, help="pods in the queue per case")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--config", default="volcano-shape", help="volcano-shape, or a shipped policy's name")
    args = parser.parse_args()
    try:  # a bad name is refused before anything runs, with the names there are
        allocate_only(args.config)
    except CalderaError as e:
        parser.error(f"--config: {e}")
    print(
        f"{'nodes':>6} {'gang':>5} {'pods bound':>10} {'decisions/s':>12} {'ms per gang':>12} {'CPU ms per gang':>16}"
    )
    for nodes in (int(n) for n in args.nodes.split(",")):
        for gang in (int(g) for g in args.gangs.split(",")):
            rate, ms, cpu_ms, bound = measure(nodes, gang, args.pods, args.repeat, args.config)
            print(f"{nodes:>6} {gang:>5} {bound:>10} {rate:>12,.0f} {ms:>12.2f} {cpu_ms:>16.2f}", flush=True)


if __name__ == "__main__":
    main()
