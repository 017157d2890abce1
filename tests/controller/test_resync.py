"""`resync_is_idle`: what lets the control plane skip the re-sync a phase change asks for, checked against
running that re-sync for real over every phase, PodGroup phase and a spread of pod states."""

from __future__ import annotations

import itertools

import pytest

from caldera.controller import JOB_TARGET, SYNC_JOB, execute, resync_is_idle
from caldera.core.objects import (
    JOB_PHASES,
    PG_INQUEUE,
    PG_PENDING,
    PG_RUNNING,
    POD_FAILED,
    POD_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    Job,
)

from .builders import make_job, make_pod_of, make_task

PHASE_SETS = [
    (),
    (POD_PENDING,),
    (POD_RUNNING,),
    (POD_RUNNING, POD_PENDING),
    (POD_RUNNING, POD_RUNNING),
    (POD_SUCCEEDED, POD_SUCCEEDED),
    (POD_SUCCEEDED, POD_FAILED),
    (POD_FAILED, POD_FAILED),
    (POD_RUNNING, POD_SUCCEEDED),
]


def jobs(phase: str) -> list[Job]:
    return [
        make_job(tasks=[make_task(replicas=2)], phase=phase),
        make_job(tasks=[make_task(replicas=2, min_available=1)], min_available=1, phase=phase),
        make_job(tasks=[make_task(replicas=2)], min_success=1, phase=phase, retry_count=1),
        make_job(
            tasks=[make_task(replicas=2, min_available=1)],
            min_available=1,
            phase=phase,
            annotations={"caldera.dev/elastic-max-worker": "2"},
        ),
    ]


@pytest.mark.parametrize("phase", sorted(JOB_PHASES))
@pytest.mark.parametrize("pg_phase", ["", PG_PENDING, PG_INQUEUE, PG_RUNNING])
def test_an_idle_resync_is_one_that_plans_nothing(phase: str, pg_phase: str) -> None:
    seen = 0
    for job, phases, deleting in itertools.product(jobs(phase), PHASE_SETS, (False, True)):
        pods = [make_pod_of(job, index=i, phase=p, deleting=deleting and i == 0) for i, p in enumerate(phases)]
        plan = execute(job, pods, SYNC_JOB, JOB_TARGET, now=5.0, podgroup_phase=pg_phase)
        idle = resync_is_idle(job, plan)
        job.status = plan.status
        again = execute(job, pods, SYNC_JOB, JOB_TARGET, now=5.0, podgroup_phase=pg_phase)
        if idle:
            seen += 1
            assert not again.kill and not again.create and not again.delete_podgroup
            assert again.status == plan.status
        elif plan.phase_changed and not plan.kill and not plan.create and plan.sync_podgroup:
            # Not idle: the re-sync would move the job on, so it must run.
            assert again.status.phase != plan.status.phase
    # Syncs that leave their job be (a Pending, Running or Restarting job's) are among the cases.
    assert (seen > 0) == (phase in ("Pending", "Running", "Restarting"))


def test_a_job_whose_gang_just_started_needs_no_resync() -> None:
    job = make_job(tasks=[make_task(replicas=2)])
    pods = [make_pod_of(job, index=i, phase=POD_RUNNING) for i in range(2)]
    plan = execute(job, pods, SYNC_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_RUNNING)
    assert (plan.previous_phase, plan.phase) == ("Pending", "Running")
    assert resync_is_idle(job, plan)
