"""Same inputs, same output, byte for byte: in one process, across processes, and as the CLI prints it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from caldera.testing.scenario import arrival, cluster, gpu_nodes, queue, run_scenario, task, vcjob, workload

# Something of everything: gangs, priorities and preemption, two queues and reclaim, elastic jobs, a fault.
CLUSTER = cluster(
    nodes=[gpu_nodes(count=3, gpus=2), gpu_nodes(name="cpu", count=1, gpus=0)],
    queues=[queue("research", weight=2), queue("prod")],
    priority_classes={"high": 1000, "low": 10},
)
WORKLOAD = workload(
    *[
        arrival(vcjob(f"r{i}", queue="research", tasks=[task(replicas=2)], min_available=1), at=i, duration=300)
        for i in range(4)
    ],
    arrival(vcjob("low", queue="prod", tasks=[task(replicas=2)], min_available=2, priority_class="low"), at=5),
    arrival(vcjob("high", queue="prod", tasks=[task(replicas=2)], min_available=2, priority_class="high"), at=20),
    arrival(vcjob("cpu-only", tasks=[task(gpus=0, replicas=3)], min_available=3), at=7, duration=50),
    faults=[{"time": 30, "pod": "cpu-only-worker-0", "exitCode": 137}],
)


def as_json(report: dict[str, Any]) -> str:
    return json.dumps(report, sort_keys=False)  # as `caldera simulate -o json` prints it


def test_same_scenario_twice_gives_identical_json() -> None:
    first = as_json(run_scenario(cluster=CLUSTER, workload=WORKLOAD))
    second = as_json(run_scenario(cluster=CLUSTER, workload=WORKLOAD))
    assert first == second


def simulate_cli(tmp_path: Path, hash_seed: str) -> bytes:
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(CLUSTER))
    (tmp_path / "workload.yaml").write_text(yaml.safe_dump(WORKLOAD))
    command = [sys.executable, "-m", "caldera.cli.main", "simulate", "--cluster", "cluster.yaml"]
    command += ["--workload", "workload.yaml", "-o", "json"]
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, check=True, timeout=120).stdout


def test_cli_output_is_identical_across_processes_and_matches_the_kit(tmp_path: Path) -> None:
    """Different hash seeds change every set's iteration order: nothing may depend on it."""
    outputs = {simulate_cli(tmp_path, seed) for seed in ("0", "1", "4242")}
    assert len(outputs) == 1
    [output] = outputs
    assert output.decode().rstrip("\n") == as_json(run_scenario(cluster=CLUSTER, workload=WORKLOAD))
