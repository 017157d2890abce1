"""What results.json says of the workload itself: its GPU-hours, and the average run time no policy can beat."""

from __future__ import annotations

import json

from caldera.sim.inputs import Cluster, JobArrival, Workload
from caldera.sim.markdown import RunInfo, mean_run_time, results_json, work_gpu_hours
from caldera.sim.sources import Inputs
from caldera.sim.traces import gang_job
from caldera.testing.builders import make_node


def inputs(*jobs: tuple[int, float | None]) -> Inputs:
    """One gang job of `gpus` one-GPU pods per (gpus, duration)."""
    arrivals = tuple(JobArrival(0.0, gang_job(f"j{i}", "default", g), d) for i, (g, d) in enumerate(jobs))
    node = make_node("n", resources={"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"})
    return Inputs(Cluster((node,), (), ()), Workload(arrivals), "one node", "jobs", "all of them")


def test_work_is_gpus_times_run_time_and_the_mean_run_time_is_per_job() -> None:
    w = inputs((8, 3600.0), (1, 1800.0), (2, 900.0))
    assert work_gpu_hours(w) == 8 + 0.5 + 0.5
    assert mean_run_time(w) == (3600 + 1800 + 900) / 3


def test_jobs_running_until_killed_add_no_work_and_have_no_run_time() -> None:
    w = inputs((4, None), (1, 600.0))
    assert work_gpu_hours(w) == 600 / 3600
    assert mean_run_time(w) == 600.0
    assert mean_run_time(inputs((4, None))) is None


def test_results_json_carries_them_with_the_cluster_size() -> None:
    w = inputs((8, 3600.0))
    doc = json.loads(results_json([], RunInfo(w, (), seed=0)))
    assert (doc["clusterGpus"], doc["workGpuHours"], doc["meanRunTime"]) == (8.0, 8.0, 3600.0)
