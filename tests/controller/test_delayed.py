"""The table of delayed actions: slots, firing order and the cancellation rules (reference §2.2)."""

from __future__ import annotations

import pytest

from caldera.controller import DelayedActions, Request, Target
from caldera.core.objects import POD_FAILED, POD_PENDING, POD_RUNNING, POD_SUCCEEDED

from .builders import make_job, make_pod_of

KEY = "default/job"


def pod_target(pod: str = "job-worker-0", task: str = "worker", scope: str = "job") -> Target:
    return Target(scope, task, pod)


def test_due_pops_in_time_order_ties_in_insertion_order() -> None:
    table = DelayedActions()
    table.add(KEY, "RestartJob", 20.0, pod_target("a"))
    table.add(KEY, "AbortJob", 10.0, pod_target("b"))
    table.add("default/other", "AbortJob", 10.0, pod_target("c"))
    assert table.next_due() == 10.0
    assert table.due(9.0) == []
    assert [e.target.pod for e in table.due(10.0)] == ["b", "c"]
    assert table.next_due() == 20.0
    assert [e.action for e in table.due(100.0)] == ["RestartJob"]
    assert (table.next_due(), len(table)) == (None, 0)


def test_same_action_for_the_same_pod_keeps_the_first_due_time() -> None:
    table = DelayedActions()
    first = table.add(KEY, "AbortJob", 60.0, pod_target(), event="PodPending")
    assert table.add(KEY, "AbortJob", 90.0, pod_target(), event="PodPending") is first
    assert [e.due for e in table.entries()] == [60.0]


def test_another_action_for_the_same_pod_replaces() -> None:
    table = DelayedActions()
    table.add(KEY, "AbortJob", 60.0, pod_target(), event="PodPending")
    table.add(KEY, "RestartJob", 90.0, pod_target(), event="PodFailed")
    assert [(e.action, e.due) for e in table.entries()] == [("RestartJob", 90.0)]


@pytest.mark.parametrize(
    ("timer_event", "new_event", "cancelled"),
    [
        pytest.param("PodPending", "PodPending", False, id="pending-keeps-pending-timer"),
        pytest.param("PodPending", "PodRunning", True, id="running-cancels-pending-timer"),
        pytest.param("PodPending", "PodFailed", True, id="failed-cancels-pending-timer"),
        pytest.param("PodPending", "PodEvicted", True, id="evicted-cancels-pending-timer"),
        pytest.param("PodFailed", "PodRunning", True, id="running-cancels-failed-timer"),
        pytest.param("PodEvicted", "PodRunning", True, id="running-cancels-evicted-timer"),
        pytest.param("PodFailed", "PodEvicted", False, id="evicted-keeps-failed-timer"),
        pytest.param("PodFailed", "PodPending", False, id="pending-keeps-failed-timer"),
        pytest.param("PodPending", "TaskCompleted", False, id="non-pod-event-cancels-nothing"),
        pytest.param("Unknown", "PodRunning", False, id="running-keeps-job-event-timer"),
    ],
)
def test_cancel_for_request(timer_event: str, new_event: str, cancelled: bool) -> None:
    table = DelayedActions()
    table.add(KEY, "RestartJob", 60.0, pod_target(), event=timer_event)
    gone = table.cancel_for_request(KEY, Request(new_event, task="worker", pod="job-worker-0"))
    assert bool(gone) == cancelled
    assert len(table) == (0 if cancelled else 1)


def test_cancel_for_request_only_touches_that_pod() -> None:
    table = DelayedActions()
    table.add(KEY, "RestartJob", 60.0, pod_target("job-worker-1"), event="PodPending")
    assert table.cancel_for_request(KEY, Request("PodRunning", pod="job-worker-0")) == []
    assert table.cancel_for_request("default/other", Request("PodRunning", pod="job-worker-1")) == []
    assert len(table) == 1


def test_pending_timer_of_an_earlier_incarnation_survives_a_new_pod_of_the_same_name() -> None:
    table = DelayedActions()
    table.add(KEY, "AbortJob", 60.0, pod_target(), event="PodPending", pod_uid="old")
    assert table.cancel_for_request(KEY, Request("PodRunning", pod="job-worker-0"), pod_uid="new") == []
    assert len(table.cancel_for_request(KEY, Request("PodRunning", pod="job-worker-0"), pod_uid="old")) == 1


@pytest.mark.parametrize(
    ("phase", "deleted", "cancelled"),
    [
        pytest.param(POD_RUNNING, False, True, id="running"),
        pytest.param(POD_FAILED, False, True, id="failed"),
        pytest.param(POD_PENDING, False, False, id="pending"),
        pytest.param(POD_SUCCEEDED, False, False, id="succeeded-is-no-pod-event"),
        pytest.param(POD_SUCCEEDED, True, True, id="deleted-is-an-eviction"),
    ],
)
def test_cancel_for_pod_phase(phase: str, deleted: bool, cancelled: bool) -> None:
    job = make_job()
    pod = make_pod_of(job, phase=phase)
    table = DelayedActions()
    table.add(job.key, "AbortJob", 60.0, pod_target(pod.name), event="PodPending")
    assert bool(table.cancel_for_pod_phase(pod, phase, deleted=deleted)) == cancelled


def scoped_table() -> DelayedActions:
    table = DelayedActions()
    table.add(KEY, "RestartJob", 10.0, Target("job", "worker", "job-worker-0"))
    table.add(KEY, "AbortJob", 11.0, Target("job", "ps", "job-ps-0"))
    table.add(KEY, "RestartTask", 12.0, Target("task", "worker", "job-worker-1"))
    table.add(KEY, "RestartTask", 13.0, Target("task", "ps", "job-ps-1"))
    table.add(KEY, "RestartPod", 14.0, Target("pod", "worker", "job-worker-2"))
    table.add(KEY, "RestartPod", 15.0, Target("pod", "worker", "job-worker-3"))
    table.add("default/other", "RestartJob", 16.0, Target("job", "worker", "other-worker-0"))
    return table


@pytest.mark.parametrize(
    ("action", "target", "left"),
    [
        pytest.param("TerminateJob", Target("job"), [12.0, 13.0, 14.0, 15.0, 16.0], id="job-level-cancels-job-level"),
        pytest.param("RestartTask", Target("task", "worker"), [10.0, 11.0, 13.0, 14.0, 15.0, 16.0], id="same-task"),
        pytest.param(
            "RestartPod", Target("pod", "worker", "job-worker-2"), [10.0, 11.0, 12.0, 13.0, 15.0, 16.0], id="same-pod"
        ),
        pytest.param("SyncJob", Target("job"), [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0], id="internal-cancels-none"),
    ],
)
def test_cancel_scope(action: str, target: Target, left: list[float]) -> None:
    table = scoped_table()
    table.cancel_scope(KEY, action, target)
    assert [e.due for e in table.entries()] == left


def test_drop_job() -> None:
    table = scoped_table()
    assert len(table.drop_job(KEY)) == 6
    assert [e.key for e in table.entries()] == ["default/other"]
    assert table.entries(KEY) == []


def test_cancelled_and_replaced_entries_never_fire() -> None:
    """Entries leave the table once; the heap behind `due` skips what was cancelled or replaced."""
    table = DelayedActions()
    table.add(KEY, "AbortJob", 10.0, pod_target("a"), event="PodPending")
    table.add(KEY, "AbortJob", 20.0, pod_target("b"), event="PodPending")
    table.add(KEY, "RestartJob", 30.0, pod_target("b"), event="PodFailed")  # replaces b's timer
    assert table.cancel_scope(KEY, "AbortJob", Target()) != []  # a job-level action clears the job-level timers
    assert (len(table), table.next_due()) == (0, None)
    assert table.due(100.0) == []


def test_many_jobs_fire_in_time_order() -> None:
    table = DelayedActions()
    for i in range(50):
        table.add(f"default/job-{i}", "AbortJob", float(100 - i), pod_target("p"))
    table.drop_job("default/job-0")
    fired = table.due(1000.0)
    assert [e.due for e in fired] == [float(t) for t in range(51, 100)]
    assert len(table) == 0


def test_has_says_whether_a_job_has_a_timer_pending() -> None:
    table = DelayedActions()
    assert not table.has("default/job")
    table.add("default/job", "AbortJob", 10.0, pod_target(), event="PodPending")
    assert table.has("default/job") and not table.has("default/other")
    assert [e.action for e in table.due(10.0)] == ["AbortJob"]
    assert not table.has("default/job")
