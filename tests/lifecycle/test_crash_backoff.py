"""A crash loop backs off as the kubelet does: at once, then 10 s doubling to 5 min, reset after 10 min running.

The control plane with the embedded cluster's `RestartBackoff`, an executor the test drives
(processes "exit" when the test says) and a manual clock: no sleeping.
"""

from __future__ import annotations

import pytest

from caldera.core import objects as o
from caldera.core.jobmanifest import parse_job
from caldera.scheduler.scheduler import Scheduler
from caldera.system.backoff import RestartBackoff
from caldera.system.control import CRASH_LOOP, ControlPlane
from caldera.testing.builders import make_node
from caldera.utils.clock import ManualClock

from .simkit import manifest, task
from .test_control_plane import HandExecutor

POD = "default/job-worker-0"


@pytest.fixture
def cluster() -> tuple[ControlPlane, HandExecutor, ManualClock]:
    executor, clock = HandExecutor(), ManualClock()
    plane = ControlPlane(Scheduler(), executor, clock, RestartBackoff())
    plane.add_nodes([make_node("n-0", resources={"cpu": "8", "nvidia.com/gpu": "2"})])
    plane.submit(parse_job(manifest("job", tasks=[task(replicas=1, restart_policy="OnFailure")]), "test"))
    plane.settle()
    assert executor.started == ["job-worker-0"]
    return plane, executor, clock


def crash(plane: ControlPlane) -> None:
    plane.pod_exited(POD, 1)
    plane.settle()


def restarts_after_waiting(plane: ControlPlane, executor: HandExecutor, clock: ManualClock) -> float:
    """How long after its crash the pod's process was started again (stepping the clock to each wake-up)."""
    started, crashed_at = len(executor.started), clock.now()
    while len(executor.started) == started:
        wake = plane.next_wakeup()
        assert wake is not None, "a pod waiting to restart must wake the loop"
        pod = plane.pods[POD]
        assert (pod.status.phase, pod.status.reason) == (o.POD_RUNNING, CRASH_LOOP)
        clock.set(wake)
        plane.settle()
    return clock.now() - crashed_at


def test_a_crash_loop_waits_10s_doubling_to_5min(cluster: tuple[ControlPlane, HandExecutor, ManualClock]) -> None:
    plane, executor, clock = cluster
    waits = []
    for _ in range(9):
        clock.advance(1)  # each run lasts a second
        crash(plane)
        if len(executor.started) == 1 + len(waits) + 1:  # restarted at once
            waits.append(0.0)
            continue
        waits.append(restarts_after_waiting(plane, executor, clock))
    assert waits == [0, 10, 20, 40, 80, 160, 300, 300, 300]
    pod = plane.pods[POD]
    assert (pod.status.restart_count, pod.status.reason, pod.status.exit_code) == (9, "", 1)
    backoffs = [e.message for e in plane.events if e.kind == "BackOff"]
    assert backoffs[0] == "back-off 10s restarting failed container (exit code 1)"


def test_the_wait_is_not_cut_short(cluster: tuple[ControlPlane, HandExecutor, ManualClock]) -> None:
    plane, executor, clock = cluster
    crash(plane)  # the first restart is at once
    crash(plane)
    assert len(executor.started) == 2
    clock.advance(9.9)
    plane.settle()
    assert len(executor.started) == 2
    assert plane.pods[POD].status.reason == CRASH_LOOP
    clock.advance(0.1)
    plane.settle()
    assert len(executor.started) == 3
    assert plane.pods[POD].status.reason == ""


def test_ten_minutes_of_running_resets_the_back_off(cluster: tuple[ControlPlane, HandExecutor, ManualClock]) -> None:
    plane, executor, clock = cluster
    for _ in range(4):
        crash(plane)
        while plane.next_wakeup() is not None:
            clock.set(plane.next_wakeup() or 0.0)
            plane.settle()
    assert len(executor.started) == 5  # waits so far 0, 10, 20, 40: the next one would be 80 s
    clock.advance(600)  # exactly 10 minutes: not yet stable
    crash(plane)
    assert len(executor.started) == 5
    assert restarts_after_waiting(plane, executor, clock) == 80
    clock.advance(600.5)  # more than 10 minutes since that restart
    crash(plane)
    assert len(executor.started) == 7  # at once, and the back-off starts again at 10 s
    crash(plane)
    assert restarts_after_waiting(plane, executor, clock) == 10


def test_a_pod_waiting_to_restart_is_deleted_at_once(cluster: tuple[ControlPlane, HandExecutor, ManualClock]) -> None:
    """Nothing runs to be stopped: deleting the job removes the pod now, not after the back-off."""
    plane, executor, _ = cluster
    crash(plane)
    crash(plane)
    assert plane.pods[POD].status.reason == CRASH_LOOP
    plane.delete_job("default/job")
    plane.settle()
    assert POD not in plane.pods
    assert executor.stopping == []  # no process was asked to stop
    assert plane.next_wakeup() is None
    plane.state.check_invariants()


def test_an_eviction_while_waiting_is_reported_at_once(cluster: tuple[ControlPlane, HandExecutor, ManualClock]) -> None:
    plane, executor, _ = cluster
    crash(plane)
    crash(plane)
    plane.evict(POD, "Evicted", "by the test")
    plane.settle()
    assert plane.pods[POD].status.reason == ""  # re-created by the job's SyncJob: a new pod, no back-off
    assert executor.started == ["job-worker-0", "job-worker-0", "job-worker-0"]
    plane.state.check_invariants()


def test_without_a_back_off_the_pod_restarts_at_once() -> None:
    """The simulator's executor: no back-off unless asked."""
    executor, clock = HandExecutor(), ManualClock()
    plane = ControlPlane(Scheduler(), executor, clock)
    plane.add_nodes([make_node("n-0", resources={"cpu": "8", "nvidia.com/gpu": "2"})])
    plane.submit(parse_job(manifest("job", tasks=[task(replicas=1, restart_policy="OnFailure")]), "test"))
    plane.settle()
    for _ in range(5):
        crash(plane)
    assert len(executor.started) == 6
    assert plane.next_wakeup() is None
