"""Policy resolution: Volcano's applyPolicies order (reference §2.2)."""

from __future__ import annotations

import pytest

from caldera.controller import Request, Resolution, Target, resolve
from caldera.core.objects import LifecyclePolicy

from .builders import make_job, make_task


def policy(action: str, *events: str, exit_code: int | None = None, timeout: float | None = None) -> LifecyclePolicy:
    return LifecyclePolicy(action=action, events=events, exit_code=exit_code, timeout=timeout)


SPEC = make_job(
    tasks=[
        make_task(
            name="worker",
            policies=[
                policy("RestartTask", "PodEvicted"),
                policy("RestartPod", exit_code=137),
                policy("AbortJob", "PodPending", timeout=60.0),
            ],
        ),
        make_task(name="ps", policies=[policy("TerminateJob", "*")]),
        make_task(name="chief", policies=[policy("CompleteJob", "PodPending")]),
    ],
    policies=[
        policy("RestartJob", "PodEvicted", "PodFailed"),
        policy("TerminateJob", exit_code=3),
        policy("AbortJob", "Unknown", timeout=30.0),
    ],
).spec


@pytest.mark.parametrize(
    ("req", "version", "expected"),
    [
        pytest.param(
            Request("PodFailed", task="worker", action="ResumeJob"), 0, ("ResumeJob", None),
            id="explicit-action-first",
        ),
        pytest.param(Request("OutOfSync", task="ps"), 0, ("SyncJob", None), id="internal-outofsync-syncs"),
        pytest.param(Request("PodRunning", task="ps"), 0, ("SyncJob", None), id="internal-podrunning-syncs"),
        pytest.param(Request("CommandIssued", task="ps"), 0, ("SyncJob", None), id="internal-command-syncs"),
        pytest.param(
            Request("PodEvicted", task="worker", job_version=1), 2, ("SyncJob", None), id="older-version-syncs"
        ),
        pytest.param(
            Request("PodEvicted", task="worker", job_version=2), 2, ("RestartTask", None),
            id="task-policy-beats-job-policy",
        ),
        pytest.param(Request("PodEvicted", task="other"), 0, ("RestartJob", None), id="unknown-task-job-policy"),
        pytest.param(Request("PodFailed", task="worker"), 0, ("RestartJob", None), id="no-task-match-job-policy"),
        pytest.param(
            Request("PodFailed", task="worker", exit_code=137), 0, ("RestartPod", None),
            id="task-exit-code-beats-job-event",
        ),
        pytest.param(
            Request("PodFailed", task="chief", exit_code=3), 0, ("RestartJob", None),
            id="job-event-policy-listed-first-wins-over-job-exit-code",
        ),
        pytest.param(Request("TaskCompleted", task="ps"), 0, ("TerminateJob", None), id="star-matches-any-event"),
        pytest.param(
            Request("PodPending", task="worker"), 0, ("AbortJob", 60.0), id="pod-pending-with-timeout-delays"
        ),
        pytest.param(
            Request("PodPending", task="chief"), 0, ("SyncJob", None), id="pod-pending-without-timeout-ignored"
        ),
        pytest.param(
            Request("PodPending", task="ps"), 0, ("SyncJob", None), id="star-needs-a-timeout-for-pod-pending"
        ),
        pytest.param(Request("Unknown"), 0, ("AbortJob", 30.0), id="job-event-with-timeout-delays"),
        pytest.param(Request("JobUpdated"), 0, ("SyncJob", None), id="nothing-matches-syncs"),
        pytest.param(
            Request("PodFailed", task="worker", job_version=None), 5, ("RestartJob", None),
            id="no-version-is-never-stale",
        ),
    ],
)  # fmt: skip
def test_resolve(req: Request, version: int, expected: tuple[str, float | None]) -> None:
    res = resolve(SPEC, req, version)
    assert (res.action, res.delay) == expected


def test_exit_code_policy_on_the_job() -> None:
    spec = make_job(policies=[policy("TerminateJob", exit_code=3)]).spec
    assert resolve(spec, Request("PodFailed", task="worker", exit_code=3), 0).action == "TerminateJob"
    assert resolve(spec, Request("PodFailed", task="worker", exit_code=4), 0).action == "SyncJob"
    assert resolve(spec, Request("PodEvicted", task="worker"), 0).action == "SyncJob"


def test_zero_timeout_runs_at_once() -> None:
    spec = make_job(policies=[policy("RestartJob", "PodPending", timeout=0.0)]).spec
    expected = Resolution("RestartJob", None, Target("job", "worker"))
    assert resolve(spec, Request("PodPending", task="worker"), 0) == expected


def test_resolution_carries_the_target() -> None:
    res = resolve(SPEC, Request("PodFailed", task="worker", pod="job-worker-1", exit_code=137), 0)
    assert res.target == Target("pod", "worker", "job-worker-1")


def test_a_job_without_policies_only_syncs() -> None:
    """`only_syncs` (what lets the control plane skip resolution) holds exactly when `resolve` can only sync."""
    from caldera.controller import EVENTS, only_syncs

    bare = make_job(tasks=[make_task(name="worker"), make_task(name="ps")]).spec
    assert only_syncs(bare)
    assert not only_syncs(SPEC)
    assert not only_syncs(
        make_job(tasks=[make_task(), make_task(name="ps", policies=[policy("RestartPod", "*")])]).spec
    )
    assert not only_syncs(make_job(policies=[policy("AbortJob", exit_code=1)]).spec)
    for event in sorted(EVENTS):
        for task in ("", "worker", "ps", "gone"):
            for exit_code in (None, 0, 1, 137):
                for job_version in (None, 0, 5):
                    req = Request(event=event, task=task, pod="p", exit_code=exit_code, job_version=job_version)
                    res = resolve(bare, req, 3)
                    assert (res.action, res.delay) == ("SyncJob", None)
