"""fifo-nogang holds partial gangs and deadlocks where gang scheduling does not (the Kubeflow + Volcano article)."""

from __future__ import annotations

from typing import Any

from caldera.scheduler.policies import policy_text
from caldera.testing.scenario import (
    arrival,
    cluster,
    gpu_nodes,
    job_phase,
    pods_of,
    run_scenario,
    running_at,
    start_time,
    task,
    vcjob,
    workload,
)

FOUR_GPUS = cluster(nodes=[gpu_nodes(count=2, gpus=2)])
TWO_GANGS = workload(*(arrival(vcjob(n, tasks=[task(replicas=4)], min_available=4), duration=100) for n in "ab"))
UNTIL = 10_000


def partial_at(report: dict[str, Any], job: str, t: float, min_available: int) -> bool:
    """Some of the job's pods bound and running at `t`, but fewer than its gang needs."""
    return 0 < len(running_at(report, job, t)) < min_available


def test_fifo_nogang_splits_two_gangs_and_neither_ever_runs() -> None:
    report = run_scenario(cluster=FOUR_GPUS, workload=TWO_GANGS, config=policy_text("fifo-nogang"), until=UNTIL)
    for job in ("a", "b"):
        bound = [p for p in pods_of(report, job) if p["node"]]
        assert len(bound) == 2, "pods created together are taken in turn: each job gets half of the GPUs"
        assert all(p["endTime"] is None for p in bound), "a partial gang makes no progress, so no pod ever ends"
        assert partial_at(report, job, UNTIL, 4)
        assert job_phase(report, job) == "Pending"
        assert start_time(report, job) is None
    rows = {j["name"]: j for j in report["jobs"]}
    assert all(r["endTime"] is None for r in rows.values()), "the deadlock never resolves within --until"


def test_fifo_nogang_gpus_are_held_idle_for_the_whole_run() -> None:
    from caldera.scheduler.policies import load_policy
    from caldera.scheduler.scheduler import Scheduler
    from caldera.sim.engine import Simulation
    from caldera.sim.inputs import parse_cluster, parse_workload

    sim = Simulation(
        parse_cluster(FOUR_GPUS, "c"),
        parse_workload(TWO_GANGS, "w"),
        Scheduler(load_policy("fifo-nogang")),
        until=UNTIL,
    )
    sim.run()
    for job in ("default/a", "default/b"):
        work = sim.work_report(job)
        assert work.idle_gpu_seconds == 2 * UNTIL  # two GPUs held, no progress, from 0 to the end
        assert work.lost_gpu_seconds == 0.0


def test_caldera_default_runs_one_gang_then_the_other() -> None:
    report = run_scenario(cluster=FOUR_GPUS, workload=TWO_GANGS, config=policy_text("caldera-default"), until=UNTIL)
    assert (start_time(report, "a"), start_time(report, "b")) == (0.0, 100.0)
    assert [job_phase(report, j) for j in "ab"] == ["Completed", "Completed"]
    times = {p["startTime"] for j in "ab" for p in pods_of(report, j)} | {100.0, 200.0}
    assert not any(partial_at(report, j, t, 4) for j in "ab" for t in times), "never a partial gang"


def test_a_late_partial_gang_starts_its_work_only_when_whole() -> None:
    """fifo-nogang binds 2 of c's 4 pods at 10; the other 2 when a ends at 100: c's work starts then."""
    report = run_scenario(
        cluster=FOUR_GPUS,
        workload=workload(
            arrival(vcjob("a", tasks=[task(replicas=2)], min_available=2), duration=100),
            arrival(vcjob("c", tasks=[task(replicas=4)], min_available=4), at=10, duration=50),
        ),
        config=policy_text("fifo-nogang"),
    )
    starts = sorted(p["startTime"] for p in pods_of(report, "c"))
    assert starts == [10.0, 10.0, 100.0, 100.0]
    assert {p["endTime"] for p in pods_of(report, "c")} == {150.0}, "50 s of work, all of it after 100"
    assert start_time(report, "c") == 100.0
