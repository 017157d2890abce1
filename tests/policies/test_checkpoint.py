"""Preemption in simulation: a checkpointed job loses only what it did since its last checkpoint.

One GPU. A (low priority, 1000 s of work) starts at 0; B (high priority, 100 s) arrives at 250 and
preempts it. With a checkpoint every 100 s, A kept 200 s of work: it resumes at 350 with 800 s
left and ends at 1150, having thrown away 50 GPU-seconds. Without checkpoints it starts over at 350
and ends at 1350, having thrown away 250.
"""

from __future__ import annotations

from typing import Any

import pytest

from caldera.scheduler.config import default_config
from caldera.scheduler.scheduler import Scheduler
from caldera.sim.engine import CHECKPOINT_INTERVAL, Simulation
from caldera.sim.inputs import parse_cluster, parse_workload
from caldera.sim.report import build
from caldera.testing.scenario import arrival, cluster, events, gpu_nodes, pods_of, task, vcjob, workload

PRIORITIES = {"high": 1000, "low": 10}


def run(
    interval: str | None, *, gpus_per_job: int = 1, until: float | None = None
) -> tuple[Simulation, dict[str, Any]]:
    annotations = {CHECKPOINT_INTERVAL: interval} if interval is not None else None
    tasks = [task(replicas=gpus_per_job, restart_policy="Never")]
    nodes = cluster(nodes=[gpu_nodes(count=1, gpus=gpus_per_job)], priority_classes=PRIORITIES)
    wl = workload(
        arrival(
            vcjob("a", tasks=tasks, min_available=gpus_per_job, priority_class="low", annotations=annotations),
            duration=1000,
        ),
        arrival(vcjob("b", tasks=tasks, min_available=gpus_per_job, priority_class="high"), at=250, duration=100),
    )
    sim = Simulation(parse_cluster(nodes, "c"), parse_workload(wl, "w"), Scheduler(default_config()), until=until)
    sim.run()
    return sim, build(sim)


def end(report: dict[str, Any], job: str) -> float:
    return float(next(j for j in report["jobs"] if j["name"] == job)["endTime"])


@pytest.mark.parametrize(
    ("interval", "a_ends", "lost"),
    [
        pytest.param("100", 1150.0, 50.0, id="every-100s"),
        pytest.param("100s", 1150.0, 50.0, id="go-duration"),
        pytest.param("1m", 1110.0, 10.0, id="every-60s"),  # 240 saved at 250: resumes with 760 left
        pytest.param("0", 1100.0, 0.0, id="lossless"),
        pytest.param(None, 1350.0, 250.0, id="no-checkpoint"),
    ],
)
def test_a_preempted_job_resumes_from_its_last_checkpoint(interval: str | None, a_ends: float, lost: float) -> None:
    sim, report = run(interval)
    assert end(report, "b") == 350.0
    assert end(report, "a") == a_ends
    attempts = sorted((p["startTime"], p["endTime"], p["phase"]) for p in pods_of(report, "a"))
    assert attempts == [(0.0, 250.0, "Failed"), (350.0, a_ends, "Succeeded")]
    work = sim.work_report("default/a")
    assert (work.preemptions, work.lost_gpu_seconds) == (1, lost)
    assert sim.work_report("default/b").preemptions == 0


def test_a_gang_loses_its_work_on_every_gpu() -> None:
    """A 4-GPU gang preempted at 250 with checkpoints every 100 s: 50 s thrown away on each GPU."""
    sim, report = run("100", gpus_per_job=4)
    assert end(report, "a") == 1150.0
    work = sim.work_report("default/a")
    assert (work.preemptions, work.lost_gpu_seconds, work.idle_gpu_seconds) == (1, 200.0, 0.0)
    assert work.to_dict() == {
        "preemptions": 1,
        "lostGpuSeconds": 200.0,
        "idleGpuSeconds": 0.0,
        "overheadGpuSeconds": 0.0,
        "runSeconds": 1050.0,  # up 0-250 and again for the 800 s left after its checkpoint
    }


def test_the_job_is_resumed_not_failed() -> None:
    _, report = run(None)
    assert [j["phase"] for j in report["jobs"]] == ["Completed", "Completed"]
    assert [j["retryCount"] for j in report["jobs"]] == [0, 0]


@pytest.mark.parametrize("bad", ["soon", "-5"])
def test_a_bad_interval_is_reported_and_the_job_restarts_from_zero(bad: str) -> None:
    _, report = run(bad)
    assert end(report, "a") == 1350.0
    [ignored] = events(report, "CheckpointIgnored", obj="a")
    assert CHECKPOINT_INTERVAL in ignored["message"]
