"""Every row of the transition table, one case per edge (reference §2.3)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from caldera.controller import (
    ABORT_JOB,
    COMPLETE_JOB,
    JOB_TARGET,
    RESTART_JOB,
    RESTART_PARTITION,
    RESTART_POD,
    RESTART_TASK,
    RESUME_JOB,
    SYNC_JOB,
    TERMINATE_JOB,
    TRANSITIONS,
    Target,
    execute,
)
from caldera.core.objects import (
    ABORTED,
    ABORTING,
    COMPLETED,
    COMPLETING,
    FAILED,
    JOB_PHASES,
    PENDING,
    PG_INQUEUE,
    PG_PENDING,
    RESTARTING,
    RUNNING,
    TERMINATED,
    TERMINATING,
    Job,
    Pod,
)

from .builders import make_job, make_pod_of, make_task

ALL_RUNNING = ("ps-0:Running", "worker-0:Running", "worker-1:Running")
TASK_PS = Target("task", task="ps", pod="job-ps-0")
POD_W1 = Target("pod", task="worker", pod="job-worker-1")


def job_in(phase: str, *, retry_count: int = 1, version: int = 5, max_retry: int = 3) -> Job:
    """ps ×1 and worker ×2, gang of 3."""
    return make_job(
        tasks=[make_task(name="ps", replicas=1), make_task(name="worker", replicas=2)],
        phase=phase,
        retry_count=retry_count,
        version=version,
        max_retry=max_retry,
    )


def pods_from(job: Job, spec: Sequence[str]) -> list[Pod]:
    """`task-index:Phase`, with a trailing `!` for a pod already being deleted."""
    pods = []
    for item in spec:
        name, phase = item.split(":")
        task, index = name.split("-")
        deleting = phase.endswith("!")
        pods.append(make_pod_of(job, task=task, index=int(index), phase=phase.rstrip("!"), deleting=deleting))
    return pods


def full(names: Sequence[str]) -> set[str]:
    return {f"job-{n}" for n in names}


ROWS = [
    # (phase, action, target, pods, podgroup, next phase, killed, created, retry +, version +)
    # ---- Pending
    pytest.param(PENDING, RESTART_JOB, JOB_TARGET, ALL_RUNNING, PG_INQUEUE, RESTARTING,
                 ["ps-0", "worker-0", "worker-1"], [], 1, 1, id="pending-restartjob-kills-all"),
    pytest.param(PENDING, RESTART_TASK, TASK_PS, ALL_RUNNING, PG_INQUEUE, RESTARTING,
                 ["ps-0"], [], 1, 0, id="pending-restarttask-kills-task"),
    pytest.param(PENDING, RESTART_POD, POD_W1, ALL_RUNNING, PG_INQUEUE, RESTARTING,
                 ["worker-1"], [], 1, 0, id="pending-restartpod-kills-pod"),
    pytest.param(PENDING, ABORT_JOB, JOB_TARGET, ("ps-0:Running", "worker-0:Succeeded", "worker-1:Failed"),
                 PG_INQUEUE, ABORTING, ["ps-0"], [], 0, 1, id="pending-abort-keeps-finished"),
    pytest.param(PENDING, COMPLETE_JOB, JOB_TARGET, ALL_RUNNING, PG_INQUEUE, COMPLETING,
                 ["ps-0", "worker-0", "worker-1"], [], 0, 1, id="pending-complete"),
    pytest.param(PENDING, TERMINATE_JOB, JOB_TARGET, ALL_RUNNING, PG_INQUEUE, TERMINATING,
                 ["ps-0", "worker-0", "worker-1"], [], 0, 1, id="pending-terminate"),
    pytest.param(PENDING, SYNC_JOB, JOB_TARGET, (), PG_INQUEUE, PENDING,
                 [], ["ps-0", "worker-0", "worker-1"], 0, 0, id="pending-sync-creates-once-inqueue"),
    pytest.param(PENDING, SYNC_JOB, JOB_TARGET, (), PG_PENDING, PENDING,
                 [], [], 0, 0, id="pending-sync-creates-nothing-before-enqueue"),
    pytest.param(PENDING, SYNC_JOB, JOB_TARGET, ("ps-0:Running", "worker-0:Running", "worker-1:Failed"),
                 PG_INQUEUE, RUNNING, [], [], 0, 0, id="pending-sync-minavailable-started-runs"),
    pytest.param(PENDING, RESUME_JOB, JOB_TARGET, ALL_RUNNING, PG_INQUEUE, RUNNING,
                 [], [], 0, 0, id="pending-resume-is-a-sync"),
    # ---- Running
    pytest.param(RUNNING, RESTART_JOB, JOB_TARGET, ("ps-0:Running", "worker-0:Succeeded", "worker-1:Failed"),
                 PG_INQUEUE, RESTARTING, ["ps-0", "worker-0", "worker-1"], [], 1, 1, id="running-restartjob-kills-all"),
    pytest.param(RUNNING, RESTART_TASK, TASK_PS, ALL_RUNNING, PG_INQUEUE, RESTARTING,
                 ["ps-0"], [], 1, 0, id="running-restarttask"),
    pytest.param(RUNNING, RESTART_POD, POD_W1, ALL_RUNNING, PG_INQUEUE, RESTARTING,
                 ["worker-1"], [], 1, 0, id="running-restartpod"),
    pytest.param(RUNNING, ABORT_JOB, JOB_TARGET, ALL_RUNNING, PG_INQUEUE, ABORTING,
                 ["ps-0", "worker-0", "worker-1"], [], 0, 1, id="running-abort"),
    pytest.param(RUNNING, COMPLETE_JOB, JOB_TARGET, ("ps-0:Running", "worker-0:Succeeded", "worker-1:Succeeded"),
                 PG_INQUEUE, COMPLETING, ["ps-0"], [], 0, 1, id="running-complete-kills-unfinished"),
    pytest.param(RUNNING, TERMINATE_JOB, JOB_TARGET, ALL_RUNNING, PG_INQUEUE, TERMINATING,
                 ["ps-0", "worker-0", "worker-1"], [], 0, 1, id="running-terminate"),
    pytest.param(RUNNING, SYNC_JOB, JOB_TARGET, ALL_RUNNING, PG_INQUEUE, RUNNING,
                 [], [], 0, 0, id="running-sync-stays"),
    pytest.param(RUNNING, SYNC_JOB, JOB_TARGET, ("ps-0:Succeeded", "worker-0:Succeeded", "worker-1:Succeeded"),
                 PG_INQUEUE, COMPLETED, [], [], 0, 1, id="running-sync-all-succeeded-completes"),
    pytest.param(RUNNING, SYNC_JOB, JOB_TARGET, ("ps-0:Running", "worker-0:Running"),
                 PG_INQUEUE, PENDING, [], ["worker-1"], 0, 0, id="running-sync-lost-pod-back-to-pending"),
    # ---- Restarting
    pytest.param(RESTARTING, SYNC_JOB, JOB_TARGET, (), PG_INQUEUE, PENDING,
                 [], ["ps-0", "worker-0", "worker-1"], 0, 0, id="restarting-sync-pods-gone-pending"),
    pytest.param(RESTARTING, SYNC_JOB, JOB_TARGET, ("ps-0:Running!", "worker-0:Running!"), PG_PENDING, RESTARTING,
                 [], [], 0, 0, id="restarting-sync-waits-for-terminating"),
    pytest.param(RESTARTING, RESTART_POD, POD_W1, ALL_RUNNING, PG_INQUEUE, RESTARTING,
                 ["worker-1"], [], 0, 0, id="restarting-restartpod-no-retry-waits-for-the-kill"),
    pytest.param(RESTARTING, RESTART_JOB, JOB_TARGET, ("ps-0:Running", "worker-0:Running!"), PG_INQUEUE, RESTARTING,
                 ["ps-0"], [], 0, 1, id="restarting-restartjob-kills-live-again"),
    pytest.param(RESTARTING, ABORT_JOB, JOB_TARGET, ("ps-0:Running!",), PG_PENDING, RESTARTING,
                 [], [], 0, 0, id="restarting-other-with-no-live-pod-is-a-sync-no-version-bump"),
    # ---- Aborting
    pytest.param(ABORTING, RESUME_JOB, JOB_TARGET, ("ps-0:Running!", "worker-0:Failed"), PG_INQUEUE, RESTARTING,
                 [], [], 1, 1, id="aborting-resume-restarts"),
    pytest.param(ABORTING, SYNC_JOB, JOB_TARGET, ("ps-0:Running!", "worker-0:Failed"), PG_INQUEUE, ABORTING,
                 [], [], 0, 1, id="aborting-sync-waits"),
    pytest.param(ABORTING, SYNC_JOB, JOB_TARGET, ("worker-0:Failed",), PG_INQUEUE, ABORTED,
                 [], [], 0, 1, id="aborting-sync-idle-aborted"),
    # ---- Aborted
    pytest.param(ABORTED, RESUME_JOB, JOB_TARGET, ("worker-0:Failed",), "", RESTARTING,
                 [], [], 1, 1, id="aborted-resume-restarts"),
    pytest.param(ABORTED, SYNC_JOB, JOB_TARGET, ("worker-0:Running",), "", ABORTED,
                 ["worker-0"], [], 0, 1, id="aborted-sync-stays-and-kills-strays"),
    # ---- Completing, Terminating
    pytest.param(COMPLETING, SYNC_JOB, JOB_TARGET, ("ps-0:Running!", "worker-0:Succeeded"), PG_INQUEUE, COMPLETING,
                 [], [], 0, 1, id="completing-waits"),
    pytest.param(COMPLETING, RESTART_JOB, JOB_TARGET, ("worker-0:Succeeded",), PG_INQUEUE, COMPLETED,
                 [], [], 0, 1, id="completing-idle-completed-whatever-the-action"),
    pytest.param(TERMINATING, SYNC_JOB, JOB_TARGET, ("ps-0:Running!",), PG_INQUEUE, TERMINATING,
                 [], [], 0, 1, id="terminating-waits"),
    pytest.param(TERMINATING, RESUME_JOB, JOB_TARGET, ("worker-0:Failed",), PG_INQUEUE, TERMINATED,
                 [], [], 0, 1, id="terminating-idle-terminated"),
    # ---- Completed, Terminated, Failed
    pytest.param(COMPLETED, RESTART_JOB, JOB_TARGET, ("ps-0:Running", "worker-0:Succeeded"), "", COMPLETED,
                 ["ps-0"], [], 0, 1, id="completed-is-final"),
    pytest.param(TERMINATED, RESUME_JOB, JOB_TARGET, ("ps-0:Running",), "", TERMINATED,
                 ["ps-0"], [], 0, 1, id="terminated-is-final"),
    pytest.param(FAILED, SYNC_JOB, JOB_TARGET, ("worker-0:Failed",), "", FAILED,
                 [], [], 0, 1, id="failed-is-final-keeps-failed-pods"),
    # ---- an unknown or empty phase is Pending
    pytest.param("", SYNC_JOB, JOB_TARGET, ALL_RUNNING, PG_INQUEUE, RUNNING,
                 [], [], 0, 0, id="empty-phase-is-pending"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("phase", "action", "target", "pods", "podgroup", "next_phase", "killed", "created", "retry", "version"), ROWS
)
def test_row(
    phase: str,
    action: str,
    target: Target,
    pods: Sequence[str],
    podgroup: str,
    next_phase: str,
    killed: Sequence[str],
    created: Sequence[str],
    retry: int,
    version: int,
) -> None:
    job = job_in(phase)
    plan = execute(job, pods_from(job, pods), action, target, now=10.0, podgroup_phase=podgroup)
    assert plan.phase == next_phase
    assert set(plan.kill) == full(killed)
    assert {f"job-{t}-{i}" for t, i in plan.create} == full(created)
    assert plan.retry_count == 1 + retry
    assert plan.version == 5 + version
    assert plan.delete_podgroup == bool(version)


def test_every_phase_has_a_default_row() -> None:
    phases = {p for p, _ in TRANSITIONS}
    assert phases == set(JOB_PHASES)
    assert all((p, "*") in TRANSITIONS for p in JOB_PHASES)


def test_restart_partition_changes_nothing_without_partitions() -> None:
    job = job_in(RUNNING)
    pods = pods_from(job, ALL_RUNNING)
    target = Target("partition", task="worker", pod="job-worker-0")
    plan = execute(job, pods, RESTART_PARTITION, target, now=1.0, podgroup_phase=PG_INQUEUE)
    assert (plan.phase, plan.kill, plan.retry_count, plan.version) == (RUNNING, (), 1, 5)
