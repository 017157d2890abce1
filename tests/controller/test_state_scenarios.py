"""Whole lifecycles through the state machine: restarts up to maxRetry, completion, abort and resume."""

from __future__ import annotations

import pytest

from caldera.controller import (
    ABORT_JOB,
    JOB_TARGET,
    RESTART_JOB,
    RESUME_JOB,
    SYNC_JOB,
    TERMINATE_JOB,
    Target,
    command,
    execute,
    requests_for_pod_change,
    resolve,
    scope_of,
    target_for,
)
from caldera.core.objects import (
    ABORTED,
    ABORTING,
    COMPLETED,
    COMPLETING,
    FAILED,
    JOB_VERSION_KEY,
    PENDING,
    PG_INQUEUE,
    PG_PENDING,
    POD_FAILED,
    POD_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    RESTARTING,
    RUNNING,
    TERMINATED,
    TERMINATING,
    LifecyclePolicy,
    TaskSpec,
)

from .builders import Harness, make_job, make_pod_of, make_pods, make_task

RESTART_ON_FAILURE = LifecyclePolicy(action=RESTART_JOB, events=("PodFailed",))


def start(h: Harness) -> None:
    """From Pending with an admitted PodGroup to Running: pods created, then all running."""
    assert h.step(SYNC_JOB).create
    h.set_phase(POD_RUNNING)
    assert h.step(SYNC_JOB).phase == RUNNING


def fail_pod(h: Harness, name: str, exit_code: int = 1) -> str:
    """`name` fails; the request goes through policy resolution; returns the action executed."""
    pod = h.pod(name)
    pod.status.phase, pod.status.exit_code = POD_FAILED, exit_code
    (req,) = requests_for_pod_change(h.job, h.pods, POD_RUNNING, pod, deleted=False)
    res = resolve(h.job.spec, req, h.job.status.version)
    h.step(res.action, res.target)
    return res.action


def restart_cycle(h: Harness) -> list[str]:
    """After a RestartJob: the killed pods go, the job re-enters Pending, is re-admitted and runs again."""
    phases = [h.job.status.phase]
    h.drain()
    phases.append(h.step(SYNC_JOB).phase)
    if phases[-1] == PENDING:
        assert h.podgroup_phase == PG_PENDING  # the PodGroup was deleted and re-created: admitted afresh
        assert not h.step(SYNC_JOB).create  # no pod before the scheduler admits the gang again
        h.admit()
        start(h)
        phases.append(h.job.status.phase)
    return phases


def test_max_retry_counts_retries_not_runs() -> None:
    """maxRetry 3: three restarts run; the fourth failure makes the job Failed at once, with retryCount 3."""
    h = Harness(make_job(tasks=[make_task(replicas=2)], policies=[RESTART_ON_FAILURE], max_retry=3))
    start(h)
    for retry in (1, 2, 3):
        assert fail_pod(h, "job-worker-0") == RESTART_JOB
        assert (h.job.status.retry_count, h.job.status.version) == (retry, retry)
        assert set(h.plans[-1].kill) == {"job-worker-0", "job-worker-1"}  # not the last retry: all pods go
        assert restart_cycle(h) == [RESTARTING, PENDING, RUNNING]
        assert h.pod("job-worker-0").metadata.annotations[JOB_VERSION_KEY] == str(retry)
    assert fail_pod(h, "job-worker-0") == RESTART_JOB
    assert (h.job.status.phase, h.job.status.retry_count, h.job.status.reason) == (FAILED, 3, "MaxRetry")
    assert h.plans[-1].kill == ("job-worker-1",)  # the refused restart keeps the failed pod for inspection
    assert h.job.status.completion_time is not None
    h.drain()
    assert h.step(SYNC_JOB).phase == FAILED
    assert h.names == ["job-worker-0"]
    assert [c[0] for c in h.job.status.conditions][-2:] == [RUNNING, FAILED]  # no Restarting on the way


@pytest.mark.parametrize("action", [RESTART_JOB, "RestartTask", "RestartPod"])
def test_every_restart_is_refused_once_the_retries_are_used(action: str) -> None:
    job = make_job(tasks=[make_task(replicas=2)], phase=RUNNING, retry_count=2, max_retry=2)
    pods = make_pods(job, phases={"worker": [POD_FAILED, POD_RUNNING]})
    target = Target(scope_of(action), task="worker", pod="job-worker-0")
    plan = execute(job, pods, action, target, now=1.0, podgroup_phase=PG_INQUEUE)
    assert (plan.phase, plan.retry_count, plan.kill, plan.delete_podgroup) == (FAILED, 2, ("job-worker-1",), True)


def test_resume_is_refused_once_the_retries_are_used() -> None:
    job = make_job(tasks=[make_task(replicas=2)], phase=ABORTED, retry_count=3, max_retry=3)
    plan = execute(job, [], RESUME_JOB, JOB_TARGET, now=1.0, podgroup_phase="")
    assert (plan.phase, plan.retry_count, plan.reason) == (FAILED, 3, "MaxRetry")


def test_max_retry_zero_fails_on_first_failure() -> None:
    h = Harness(make_job(tasks=[make_task(replicas=2)], policies=[RESTART_ON_FAILURE], max_retry=0))
    start(h)
    fail_pod(h, "job-worker-1")
    assert h.plans[-1].kill == ("job-worker-0",)
    assert (h.job.status.phase, h.job.status.retry_count) == (FAILED, 0)


def test_late_event_of_a_killed_pod_only_syncs() -> None:
    """After a whole-job kill, a pod of the old version failing does not restart the job again."""
    h = Harness(make_job(tasks=[make_task(replicas=2)], policies=[RESTART_ON_FAILURE]))
    start(h)
    old = h.pod("job-worker-1")
    fail_pod(h, "job-worker-0")
    old.status.phase = POD_FAILED
    (req,) = requests_for_pod_change(h.job, h.pods, POD_RUNNING, old, deleted=False)
    assert resolve(h.job.spec, req, h.job.status.version).action == SYNC_JOB


def test_ctr_job_completes_when_trainers_complete() -> None:
    """2 pservers + 2 trainers, gang of 4: the trainers' TaskCompleted completes the job and stops the pservers."""
    trainer = make_task(
        name="trainer", replicas=2, policies=[LifecyclePolicy(action="CompleteJob", events=("TaskCompleted",))]
    )
    h = Harness(make_job(tasks=[make_task(name="pserver", replicas=2), trainer], min_available=4))
    start(h)
    actions = []
    for name in ("job-trainer-0", "job-trainer-1"):
        pod = h.pod(name)
        pod.status.phase = POD_SUCCEEDED
        (req,) = requests_for_pod_change(h.job, h.pods, POD_RUNNING, pod, deleted=False)
        res = resolve(h.job.spec, req, h.job.status.version)
        actions.append((req.event, res.action))
        h.step(res.action, res.target)
    assert actions == [("OutOfSync", SYNC_JOB), ("TaskCompleted", "CompleteJob")]
    assert h.job.status.phase == COMPLETING
    assert set(h.plans[-1].kill) == {"job-pserver-0", "job-pserver-1"}
    assert h.step(SYNC_JOB).phase == COMPLETING  # pservers still stopping
    h.drain()
    plan = h.step(SYNC_JOB)
    assert plan.phase == COMPLETED
    assert plan.finished
    assert (h.job.status.succeeded, h.job.status.running) == (2, 0)


def test_abort_then_resume() -> None:
    h = Harness(make_job(tasks=[make_task(replicas=2)]))
    start(h)
    req = command(ABORT_JOB)
    res = resolve(h.job.spec, req, h.job.status.version)
    assert h.step(res.action, target_for(res.action, req)).phase == ABORTING
    assert len(h.plans[-1].kill) == 2
    assert h.step(SYNC_JOB).phase == ABORTING  # pods still terminating
    h.drain()
    assert h.step(SYNC_JOB).phase == ABORTED
    assert h.job.status.completion_time is not None
    assert h.step(SYNC_JOB).phase == ABORTED  # stays aborted until resumed

    plan = h.step(RESUME_JOB)
    assert (plan.phase, plan.retry_count, plan.status.completion_time) == (RESTARTING, 1, None)
    assert h.step(SYNC_JOB).phase == PENDING
    h.admit()
    plan = h.step(SYNC_JOB)
    assert len(plan.create) == 2
    assert all(p.metadata.annotations[JOB_VERSION_KEY] == str(h.job.status.version) for p in h.pods)
    assert [c[0] for c in h.job.status.conditions] == [RUNNING, ABORTING, ABORTED, RESTARTING, PENDING]


def test_terminate() -> None:
    h = Harness(make_job(tasks=[make_task(replicas=2)]))
    start(h)
    h.pod("job-worker-0").status.phase = POD_SUCCEEDED
    plan = h.step(TERMINATE_JOB)
    assert (plan.phase, plan.kill) == (TERMINATING, ("job-worker-1",))
    h.drain()
    assert h.step(SYNC_JOB).phase == TERMINATED
    assert h.step(RESUME_JOB).phase == TERMINATED  # terminated jobs cannot be resumed
    assert h.names == ["job-worker-0"]


def test_min_success_completes_and_stops_the_rest_at_once() -> None:
    h = Harness(make_job(tasks=[make_task(replicas=3)], min_success=2))
    start(h)
    h.set_phase(POD_SUCCEEDED, names=["job-worker-0", "job-worker-1"])
    plan = h.step(SYNC_JOB)
    assert (plan.phase, plan.reason, plan.kill) == (COMPLETED, "MinSuccess", ("job-worker-2",))
    assert plan.delete_podgroup


@pytest.mark.parametrize(
    ("tasks", "min_available", "min_success", "phases", "expected", "reason"),
    [
        pytest.param(
            [make_task(name="ps", replicas=1), make_task(name="worker", replicas=2)],
            3, None, {"ps": [POD_SUCCEEDED], "worker": [POD_SUCCEEDED, POD_FAILED]},
            FAILED, "TaskMinAvailable", id="a-task-below-its-min-available-fails",
        ),
        pytest.param(
            [make_task(name="worker", replicas=3)], 1, 3, {"worker": [POD_SUCCEEDED, POD_SUCCEEDED, POD_FAILED]},
            FAILED, "MinSuccess", id="b-min-success-not-reached-fails",
        ),
        pytest.param(
            [make_task(name="worker", replicas=3)], 1, None, {"worker": [POD_SUCCEEDED, POD_FAILED, POD_FAILED]},
            COMPLETED, "Finished", id="c-min-available-succeeded-completes",
        ),
        pytest.param(
            [make_task(name="worker", replicas=3)], 2, None, {"worker": [POD_SUCCEEDED, POD_FAILED, POD_FAILED]},
            FAILED, "Finished", id="d-otherwise-fails",
        ),
    ],
)  # fmt: skip
def test_running_all_finished_rules(
    tasks: list[TaskSpec],
    min_available: int,
    min_success: int | None,
    phases: dict[str, list[str]],
    expected: str,
    reason: str,
) -> None:
    job = make_job(tasks=tasks, min_available=min_available, min_success=min_success, phase=RUNNING)
    plan = execute(job, make_pods(job, phases=phases), SYNC_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE)
    assert (plan.phase, plan.reason) == (expected, reason)


def test_running_with_zero_replicas_keeps_its_phase() -> None:
    job = make_job(tasks=[make_task(replicas=0)], min_available=0, phase=RUNNING)
    plan = execute(job, [], SYNC_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE)
    assert plan.phase == RUNNING


def test_running_tolerates_pending_pods_beyond_the_gang() -> None:
    """4 workers, gang of 2: two pending pods do not send the job back to Pending, three would."""
    job = make_job(tasks=[make_task(replicas=4)], min_available=2, phase=RUNNING)
    two = make_pods(job, phases={"worker": [POD_RUNNING, POD_RUNNING, POD_PENDING, POD_PENDING]})
    three = make_pods(job, phases={"worker": [POD_RUNNING, POD_PENDING, POD_PENDING, POD_PENDING]})
    assert execute(job, two, SYNC_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE).phase == RUNNING
    assert execute(job, three, SYNC_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE).phase == PENDING


# ---------------------------------------------------------------- the primitives


def test_restart_before_the_last_retry_kills_finished_pods_too() -> None:
    job = make_job(tasks=[make_task(replicas=3)], phase=RUNNING, retry_count=2, max_retry=3)
    pods = make_pods(job, phases={"worker": [POD_FAILED, POD_SUCCEEDED, POD_RUNNING]})
    plan = execute(job, pods, RESTART_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE)
    assert len(plan.kill) == 3


def test_restart_that_will_be_refused_keeps_finished_pods() -> None:
    job = make_job(tasks=[make_task(replicas=3)], phase=RUNNING, retry_count=3, max_retry=3)
    pods = make_pods(job, phases={"worker": [POD_FAILED, POD_SUCCEEDED, POD_RUNNING]})
    plan = execute(job, pods, RESTART_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE)
    assert (plan.phase, plan.kill, plan.retry_count) == (FAILED, ("job-worker-2",), 3)


def test_pods_being_deleted_are_not_killed_again_and_count_as_terminating() -> None:
    job = make_job(tasks=[make_task(replicas=2)], phase=RUNNING)
    pods = [make_pod_of(job, index=0, deleting=True), make_pod_of(job, index=1)]
    plan = execute(job, pods, ABORT_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE)
    assert plan.kill == ("job-worker-1",)
    assert (plan.counts.terminating, plan.counts.running) == (2, 0)


def test_sync_never_recreates_a_pod_that_still_exists() -> None:
    job = make_job(tasks=[make_task(replicas=3)], phase=RUNNING)
    pods = [
        make_pod_of(job, index=0, phase=POD_SUCCEEDED),
        make_pod_of(job, index=1, phase=POD_FAILED),
        make_pod_of(job, index=2, deleting=True),
    ]
    plan = execute(job, pods, SYNC_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE)
    assert plan.create == ()


def test_sync_creates_exactly_the_missing_pods_of_each_task() -> None:
    """Pods are found by name, `<job>-<task>-<index>`: tasks whose names run into each other's
    (`w` and `w-1`, whose pod 1 and `w`'s pod 11 would share a prefix) keep their own pods, and
    annotations that name no elastic task change nothing."""
    job = make_job(
        tasks=[make_task(name="w", replicas=12), make_task(name="w-1", replicas=2)],
        annotations={"caldera.dev/checkpoint-interval": "300"},
    )
    pods = [make_pod_of(job, task="w", index=i, phase=POD_PENDING) for i in (0, 1, 11)]
    pods.append(make_pod_of(job, task="w-1", index=1, phase=POD_PENDING))
    plan = execute(job, pods, SYNC_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE)
    assert plan.create == (*(("w", i) for i in range(2, 11)), ("w-1", 0))
    assert plan.kill == ()


@pytest.mark.parametrize("podgroup", ["", PG_PENDING])
def test_sync_creates_no_pod_before_the_podgroup_is_admitted(podgroup: str) -> None:
    job = make_job(tasks=[make_task(replicas=2)])
    plan = execute(job, [], SYNC_JOB, JOB_TARGET, now=1.0, podgroup_phase=podgroup)
    assert (plan.create, plan.sync_podgroup) == ((), True)


def test_sync_deletes_pods_beyond_the_replicas() -> None:
    job = make_job(tasks=[make_task(replicas=2)], phase=RUNNING)
    pods = [make_pod_of(job, index=i) for i in range(3)]
    plan = execute(job, pods, SYNC_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE)
    assert plan.kill == ("job-worker-2",)


def test_sync_creates_a_dependent_task_once_its_dependency_runs() -> None:
    """MPI: the launcher depends on the workers and is created only once both run."""
    launcher = make_task(name="mpimaster", replicas=1, depends_on=["mpiworker"])
    job = make_job(tasks=[launcher, make_task(name="mpiworker", replicas=2)])
    first = execute(job, [], SYNC_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE)
    assert first.create == (("mpiworker", 0), ("mpiworker", 1))
    workers = make_pods(job, phases={"mpimaster": [], "mpiworker": [POD_RUNNING, POD_PENDING]})
    assert execute(job, workers, SYNC_JOB, JOB_TARGET, now=2.0, podgroup_phase=PG_INQUEUE).create == ()
    workers[1].status.phase = POD_RUNNING
    assert execute(job, workers, SYNC_JOB, JOB_TARGET, now=3.0, podgroup_phase=PG_INQUEUE).create == (("mpimaster", 0),)


def test_created_pods_count_as_pending() -> None:
    job = make_job(tasks=[make_task(replicas=2)])
    plan = execute(job, [], SYNC_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE)
    assert (plan.counts.pending, plan.status.pending) == (2, 2)


def test_restart_task_kills_only_that_task_and_keeps_the_version() -> None:
    job = make_job(tasks=[make_task(name="ps", replicas=1), make_task(name="worker", replicas=2)], phase=RUNNING)
    pods = make_pods(job)
    req = requests_for_pod_change(job, pods, POD_RUNNING, pods[1], deleted=True)[0]
    target = target_for("RestartTask", req)
    plan = execute(job, pods, "RestartTask", target, now=1.0, podgroup_phase=PG_INQUEUE)
    assert (set(plan.kill), plan.version, plan.delete_podgroup) == ({"job-worker-0", "job-worker-1"}, 0, False)


def test_restart_task_on_a_task_with_no_pod_still_counts_a_retry() -> None:
    job = make_job(tasks=[make_task(name="worker", replicas=2)], phase=RUNNING)
    plan = execute(job, [], "RestartTask", Target("task", task="worker"), now=1.0, podgroup_phase="")
    assert (plan.phase, plan.kill, plan.retry_count) == (RESTARTING, (), 1)


def test_unknown_action_is_handled_by_the_default_row() -> None:
    job = make_job(tasks=[make_task(replicas=1)], phase=RUNNING)
    plan = execute(job, make_pods(job), "EnqueueJob", JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE)
    assert (plan.phase, plan.kill, plan.create) == (RUNNING, (), ())


def test_plan_does_not_touch_the_job() -> None:
    job = make_job(tasks=[make_task(replicas=1)], phase=RUNNING)
    before = job.to_dict()
    execute(job, make_pods(job), RESTART_JOB, JOB_TARGET, now=1.0, podgroup_phase=PG_INQUEUE)
    assert job.to_dict() == before
    assert job.status.phase == RUNNING
