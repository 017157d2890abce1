"""Time to replay the whole Philly trace (issue 2's benchmark; issue 5's goal: ≤ 60 s with any policy).

82,247 jobs from the shared trace `philly-derived/philly.csv` (CC BY 4.0, Jeon
et al., ATC'19; under `$CALDERA_TRACES`, else `../shared/traces`); each job is
one gang of `num_gpus` one-GPU pods in the queue of its virtual cluster, on
2,000 nodes × 8 GPUs. The whole control plane
runs: controller, scheduler (the default configuration: enqueue, allocate,
preempt, reclaim, backfill; or a shipped policy by name) and the fake executor
on the virtual clock. "replay s" is the simulation alone (loading the trace and
the report excluded); "replay CPU s" its CPU time (`time.process_time`), what a
shared machine's load does not stretch.

    python benchmarks/philly_replay.py [--trace PATH] [--jobs N] [--nodes 2000] [--policy NAME]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from caldera.scheduler.policies import load_policy
from caldera.scheduler.scheduler import Scheduler
from caldera.sim.engine import Simulation
from caldera.sim.inputs import Cluster, Workload
from caldera.sim.presets import shared_trace
from caldera.sim.report import build
from caldera.sim.traces import philly_arrivals, queues_of, read_philly
from caldera.testing.builders import make_node

PHILLY = Path("philly-derived") / "philly.csv"


def replay(trace: Path, jobs: int | None, nodes: int, policy: str | None = None) -> dict[str, float]:
    t0 = time.perf_counter()
    rows, errors = read_philly(trace)
    rows = rows[:jobs] if jobs else rows
    node_list = tuple(
        make_node(f"node-{i:05d}", resources={"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"})
        for i in range(nodes)
    )
    scheduler = Scheduler(load_policy(policy)) if policy else Scheduler()
    sim = Simulation(Cluster(node_list, tuple(queues_of(rows)), ()), Workload(tuple(philly_arrivals(rows))), scheduler)
    t1, c1 = time.perf_counter(), time.process_time()
    sim.run()
    t2, c2 = time.perf_counter(), time.process_time()
    summary = build(sim)["summary"]
    return {
        "jobs": len(rows),
        "bad rows": len(errors),
        "load s": t1 - t0,
        "replay s": t2 - t1,
        "replay CPU s": c2 - c1,
        "avg JCT h": (summary["avgJCT"] or 0) / 3600,
        "avg queue delay s": summary["avgQueueDelay"] or 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--trace", type=Path, help="the Philly CSV (default: the shared trace, or under $CALDERA_TRACES)"
    )
    parser.add_argument("--jobs", type=int, default=None, help="only the first N jobs")
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--policy", help="a shipped policy (caldera.scheduler.policies) instead of the default config")
    args = parser.parse_args()
    result = replay(args.trace or shared_trace(PHILLY), args.jobs, args.nodes, args.policy)
    for key, value in result.items():
        print(f"{key:>18}: {value:,.2f}" if isinstance(value, float) else f"{key:>18}: {value:,}")


if __name__ == "__main__":
    main()
