"""What the pod handler raises for each pod change (reference §2.2, Events)."""

from __future__ import annotations

import pytest

from caldera.controller import (
    JOB_TARGET,
    Request,
    Target,
    command,
    requests_for_pod_change,
    requests_for_podgroup_change,
    scope_of,
    target_for,
)
from caldera.core.objects import (
    JOB_VERSION_KEY,
    PG_INQUEUE,
    PG_RUNNING,
    PG_UNKNOWN,
    POD_FAILED,
    POD_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    POD_UNKNOWN,
    Job,
)

from .builders import make_job, make_pod_of, make_pods, make_task


def job_with(replicas: int = 2, max_retry: int = 3) -> Job:
    return make_job(tasks=[make_task(replicas=replicas, max_retry=max_retry)], version=2)


@pytest.mark.parametrize(
    ("old", "new", "others", "event"),
    [
        pytest.param(None, POD_PENDING, [POD_PENDING], "PodPending", id="added-pending"),
        pytest.param(None, POD_RUNNING, [POD_RUNNING], "PodRunning", id="added-running-on-readoption"),
        pytest.param(POD_RUNNING, POD_PENDING, [POD_RUNNING], "PodPending", id="back-to-pending"),
        pytest.param(POD_PENDING, POD_RUNNING, [POD_RUNNING], "PodRunning", id="pending-to-running"),
        pytest.param(POD_RUNNING, POD_RUNNING, [POD_RUNNING], "OutOfSync", id="running-no-change"),
        pytest.param(POD_RUNNING, POD_FAILED, [POD_RUNNING], "PodFailed", id="running-to-failed"),
        pytest.param(POD_FAILED, POD_FAILED, [POD_RUNNING], "OutOfSync", id="failed-again"),
        pytest.param(POD_RUNNING, POD_SUCCEEDED, [POD_RUNNING], "OutOfSync", id="succeeded-task-not-done"),
        pytest.param(POD_RUNNING, POD_SUCCEEDED, [POD_SUCCEEDED], "TaskCompleted", id="succeeded-task-done"),
        pytest.param(POD_SUCCEEDED, POD_SUCCEEDED, [POD_SUCCEEDED], "OutOfSync", id="succeeded-again"),
        pytest.param(POD_RUNNING, POD_UNKNOWN, [POD_RUNNING], "OutOfSync", id="unknown-phase"),
    ],
)
def test_phase_change(old: str | None, new: str, others: list[str], event: str) -> None:
    job = job_with()
    pods = make_pods(job, phases={"worker": [new, *others]})
    pods[0].status.exit_code = 3 if new == POD_FAILED else None
    (req,) = requests_for_pod_change(job, pods, old, pods[0], deleted=False)
    assert req.event == event
    assert (req.task, req.pod, req.job_version) == ("worker", "job-worker-0", 2)
    assert req.exit_code == (3 if event == "PodFailed" else None)


@pytest.mark.parametrize(
    ("phase", "event"),
    [
        pytest.param(POD_RUNNING, "PodEvicted", id="running"),
        pytest.param(POD_PENDING, "PodEvicted", id="pending"),
        pytest.param(POD_SUCCEEDED, "OutOfSync", id="succeeded-loses-nothing"),
        pytest.param(POD_FAILED, "OutOfSync", id="failed-loses-nothing"),
    ],
)
def test_deletion_not_asked_by_the_controller(phase: str, event: str) -> None:
    job = job_with()
    pods = make_pods(job, phases={"worker": [phase, POD_RUNNING]})
    (req,) = requests_for_pod_change(job, pods, phase, pods[0], deleted=True)
    assert req.event == event


def test_task_completion_counts_only_pods_that_exist() -> None:
    job = job_with(replicas=2)
    pods = make_pods(job, phases={"worker": [POD_SUCCEEDED, POD_SUCCEEDED]})
    last = pods[1]
    (req,) = requests_for_pod_change(job, [last], POD_RUNNING, last, deleted=False)
    assert req.event == "OutOfSync"  # the other succeeded pod is gone: 1 of 2
    (req,) = requests_for_pod_change(job, pods, POD_RUNNING, last, deleted=False)
    assert req.event == "TaskCompleted"


@pytest.mark.parametrize(
    ("max_retry", "restarts", "phases", "event"),
    [
        pytest.param(3, (2, 1), (POD_RUNNING, POD_PENDING), "TaskFailed", id="restarts-reach-max-retry"),
        pytest.param(3, (1, 1), (POD_RUNNING, POD_PENDING), "OutOfSync", id="restarts-below-max-retry"),
        pytest.param(3, (2, 5), (POD_RUNNING, POD_SUCCEEDED), "OutOfSync", id="finished-pods-do-not-count"),
        pytest.param(-1, (50, 50), (POD_RUNNING, POD_RUNNING), "OutOfSync", id="minus-one-is-unlimited"),
        pytest.param(0, (2, 1), (POD_RUNNING, POD_RUNNING), "TaskFailed", id="zero-reads-as-default-three"),
    ],
)
def test_task_failed(max_retry: int, restarts: tuple[int, int], phases: tuple[str, str], event: str) -> None:
    job = job_with(max_retry=max_retry)
    pods = make_pods(job, phases={"worker": list(phases)})
    for pod, n in zip(pods, restarts, strict=True):
        pod.status.restart_count = n
    (req,) = requests_for_pod_change(job, pods, POD_RUNNING, pods[0], deleted=False)
    assert req.event == event


def test_task_failed_takes_precedence_over_the_phase_event() -> None:
    job = job_with(max_retry=1)
    pods = make_pods(job, phases={"worker": [POD_RUNNING, POD_RUNNING]})
    pods[0].status.restart_count = 1
    (req,) = requests_for_pod_change(job, pods, POD_PENDING, pods[0], deleted=False)
    assert req.event == "TaskFailed"


def test_pod_without_a_version_annotation_is_never_stale() -> None:
    job = job_with()
    pod = make_pod_of(job)
    del pod.metadata.annotations[JOB_VERSION_KEY]
    (req,) = requests_for_pod_change(job, [pod], POD_PENDING, pod, deleted=False)
    assert req.job_version is None


def test_no_pod_no_request() -> None:
    assert requests_for_pod_change(job_with(), [], None, None, deleted=False) == []


@pytest.mark.parametrize(
    ("old", "new", "events"),
    [
        pytest.param(PG_INQUEUE, PG_RUNNING, ["OutOfSync"], id="phase-change-resyncs"),
        pytest.param(PG_RUNNING, PG_UNKNOWN, ["Unknown"], id="unknown-raises-unknown"),
        pytest.param(PG_RUNNING, PG_RUNNING, [], id="no-change-nothing"),
    ],
)
def test_podgroup_change(old: str, new: str, events: list[str]) -> None:
    assert [r.event for r in requests_for_podgroup_change(old, new)] == events


@pytest.mark.parametrize(
    ("action", "scope"),
    [
        ("RestartTask", "task"),
        ("RestartPod", "pod"),
        ("RestartPartition", "partition"),
        ("RestartJob", "job"),
        ("AbortJob", "job"),
        ("ResumeJob", "job"),
        ("SyncJob", "job"),
    ],
)
def test_scope_of(action: str, scope: str) -> None:
    assert scope_of(action) == scope


def test_target_keeps_task_and_pod_whatever_the_scope() -> None:
    req = Request(event="PodFailed", task="worker", pod="job-worker-1")
    assert target_for("RestartTask", req) == Target("task", "worker", "job-worker-1")
    assert target_for("RestartJob", req).scope == "job"


def test_command_carries_its_action() -> None:
    assert command("AbortJob") == Request(event="CommandIssued", action="AbortJob")
    assert target_for("AbortJob", command("AbortJob")) == JOB_TARGET


def test_new_pods_raise_pod_pending_or_task_failed_in_one_pass() -> None:
    """`requests_for_new_pods` agrees with `requests_for_pod_change` for each pod just added."""
    from caldera.controller import requests_for_new_pods

    job = job_with(replicas=3, max_retry=2)
    pods = [make_pod_of(job, index=i, phase=POD_PENDING) for i in range(3)]
    pods[0].status.phase, pods[0].status.restart_count = POD_RUNNING, 1
    new = pods[1:]
    assert [r.event for r in requests_for_new_pods(job, pods, new)] == ["PodPending", "PodPending"]
    for pod in new:
        (one,) = requests_for_pod_change(job, pods, None, pod, deleted=False)
        assert one.event == "PodPending"
    pods[0].status.restart_count = 2
    assert [r.event for r in requests_for_new_pods(job, pods, new)] == ["TaskFailed", "TaskFailed"]
    assert [r.pod for r in requests_for_new_pods(job, pods, new)] == ["job-worker-1", "job-worker-2"]


@pytest.mark.parametrize("max_retry", [-1, 0, 2, 3])
@pytest.mark.parametrize("old", [None, POD_PENDING, POD_RUNNING, POD_SUCCEEDED])
def test_started_pod_request_agrees_with_the_pod_handler(max_retry: int, old: str | None) -> None:
    """`request_for_started_pod`, given the job's live restarts once, raises what `requests_for_pod_change` does."""
    from caldera.controller import live_restarts, request_for_started_pod

    job = make_job(tasks=[make_task(replicas=4, max_retry=max_retry), make_task(name="ps", replicas=1)], version=1)
    phases = [POD_RUNNING, POD_PENDING, POD_SUCCEEDED, POD_RUNNING]
    pods = [make_pod_of(job, index=i, phase=p) for i, p in enumerate(phases)]
    pods.append(make_pod_of(job, task="ps", index=0, phase=POD_RUNNING))
    for restarts in ((0, 0, 0, 0, 5), (1, 0, 4, 0, 0), (1, 1, 0, 0, 0), (2, 1, 0, 0, 0)):
        for pod, n in zip(pods, restarts, strict=True):
            pod.status.restart_count = n
        counted = live_restarts(pods)
        for pod in pods:
            if pod.status.phase not in (POD_RUNNING, POD_PENDING):
                continue
            (want,) = requests_for_pod_change(job, pods, old, pod, deleted=False)
            assert request_for_started_pod(job, counted, old, pod) == want
