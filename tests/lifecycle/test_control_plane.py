"""The control plane with an executor the test drives by hand: what happens between a stop and its end."""

from __future__ import annotations

from typing import Any

from caldera.core import objects as o
from caldera.core.jobmanifest import parse_job
from caldera.scheduler.scheduler import Scheduler
from caldera.system.control import ControlPlane
from caldera.testing.builders import make_node
from caldera.utils.clock import ManualClock

from .simkit import manifest, task


class HandExecutor:
    """Starts nothing and stops nothing until the test says so."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.stopping: list[str] = []

    def start(self, pod: o.Pod, node: o.Node) -> None:
        self.started.append(pod.name)

    def stop(self, pod: o.Pod) -> None:
        self.stopping.append(pod.key)


def plane_with(nodes: int = 1, gpus: int = 2) -> tuple[ControlPlane, HandExecutor, ManualClock]:
    executor, clock = HandExecutor(), ManualClock()
    plane = ControlPlane(Scheduler(), executor, clock)
    plane.add_nodes([make_node(f"n-{i}", resources={"cpu": "8", "nvidia.com/gpu": str(gpus)}) for i in range(nodes)])
    return plane, executor, clock


def submit(plane: ControlPlane, name: str, **kwargs: Any) -> None:
    plane.submit(parse_job(manifest(name, **kwargs), "test"))
    plane.settle()


def test_a_stopping_pod_keeps_its_resources_until_it_is_gone() -> None:
    """Aborting a job deletes its PodGroup at once, but its pods' GPUs are free only once they stopped."""
    plane, executor, clock = plane_with()
    submit(plane, "first")
    assert executor.started == ["first-worker-0", "first-worker-1"]
    submit(plane, "second")
    assert len(executor.started) == 2  # no room

    clock.advance(10)
    plane.command("default/first", "AbortJob")
    plane.settle()
    assert sorted(executor.stopping) == ["default/first-worker-0", "default/first-worker-1"]
    assert len(executor.started) == 2  # the GPUs are still held by pods being stopped

    plane.pod_stopped("default/first-worker-0")
    plane.settle()
    assert len(executor.started) == 2  # the gang of two needs both
    plane.pod_stopped("default/first-worker-1")
    plane.settle()
    assert executor.started[2:] == ["second-worker-0", "second-worker-1"]
    assert plane.jobs["default/first"].status.phase == o.ABORTED
    plane.state.check_invariants()


def test_a_deleted_podgroup_whose_pods_still_stop_is_not_admitted_again() -> None:
    """Its pods keep their GPUs until they are gone, but the group itself is gone: the scheduler gives it no status
    and does not admit it again (it did: recomputed Pending, then Inqueue, holding its queue's share as a ghost)."""
    plane, executor, clock = plane_with()
    submit(plane, "first")
    clock.advance(10)
    plane.command("default/first", "AbortJob")
    plane.settle()
    deleted = len(plane.events)
    clock.advance(1)
    submit(plane, "second")
    clock.advance(1)
    plane.settle()
    group = next(key for key in plane.state.jobs if key.startswith("default/first-"))
    assert plane.state.jobs[group].pg_phase not in (o.PG_PENDING, o.PG_INQUEUE)
    gpus = plane.state.dim["nvidia.com/gpu"]
    assert plane.state.queue("default").inqueue[gpus] == 2000.0  # the second job's two GPUs, no more
    assert [e.reason for e in plane.events[deleted:] if e.object == group.split("/")[1]] == []
    for key in list(executor.stopping):
        plane.pod_stopped(key)
    plane.settle()
    assert executor.started[2:] == ["second-worker-0", "second-worker-1"]
    assert group not in plane.state.jobs
    plane.state.check_invariants()


def test_a_restart_reuses_the_podgroup_without_losing_the_stopping_pods() -> None:
    """RestartJob re-creates the PodGroup (same name) while the old pods still stop: they stay accounted."""
    plane, executor, clock = plane_with()
    submit(plane, "job")
    clock.advance(10)
    plane.command("default/job", "RestartJob")
    plane.settle()
    assert len(executor.stopping) == 2
    assert executor.started == ["job-worker-0", "job-worker-1"]  # not re-created while the old ones hold the names
    for key in list(executor.stopping):
        plane.pod_stopped(key)
    plane.settle()
    assert executor.started[2:] == ["job-worker-0", "job-worker-1"]
    assert plane.jobs["default/job"].status.retry_count == 1
    plane.state.check_invariants()


def test_an_exit_while_being_deleted_is_not_restarted() -> None:
    """An OnFailure pod being evicted whose process exits meanwhile is not started again."""
    plane, executor, _ = plane_with()
    submit(plane, "job", tasks=[task(restart_policy="OnFailure")])
    plane.evict("default/job-worker-0", "Evicted", "by the test")
    plane.pod_exited("default/job-worker-0", 1)
    plane.settle()
    assert executor.started == ["job-worker-0", "job-worker-1"]
    assert [e.kind for e in plane.events if e.object == "job-worker-0"] == ["Bind", "Evict"]
    plane.pod_stopped("default/job-worker-0")
    plane.settle()
    assert executor.started[-1] == "job-worker-0"  # re-created by the job's SyncJob, as a new attempt
    assert plane.attempts_of("default/job-worker-0") == 2


def test_a_pod_is_bound_once_per_incarnation() -> None:
    plane, executor, _ = plane_with()
    submit(plane, "job")
    for _ in range(3):
        plane.settle()
    assert executor.started == ["job-worker-0", "job-worker-1"]
    assert len([e for e in plane.events if e.kind == "Bind"]) == 2


def test_the_next_wakeup_is_the_earliest_timer() -> None:
    """A job's TTL and another's PodPending timeout are both timers."""
    plane, _, clock = plane_with(gpus=1)
    submit(plane, "done", tasks=[task(replicas=1)], ttlSecondsAfterFinished=100)
    plane.pod_exited("default/done-worker-0", 0)
    plane.settle()
    assert plane.next_wakeup() == 100.0
    submit(
        plane,
        "waits",
        tasks=[task(replicas=2)],
        minAvailable=1,
        policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "30s"}],
    )
    assert plane.next_wakeup() == 30.0
    clock.advance(30)
    plane.settle()
    assert plane.jobs["default/waits"].status.phase == o.ABORTING  # its running pod is still stopping
    clock.advance(70)
    plane.expire_ttls()
    assert "default/done" not in plane.jobs
    assert plane.next_wakeup() is None


def test_a_job_restored_without_its_group_keeps_its_stopping_pods_resources() -> None:
    """A daemon that restarts while an aborted job's pods still stop finds the job without its PodGroup (deleted at
    the abort): the pods still hold their GPUs until they are gone, as before the restart."""
    before, _, clock = plane_with()
    submit(before, "first")
    clock.advance(10)
    before.command("default/first", "AbortJob")
    before.settle()
    assert "default/first" not in before.podgroups
    job = before.jobs["default/first"]
    pods = [(pod, 1) for pod in before.job_pods["default/first"].values()]
    assert all(pod.deletion_timestamp is not None and pod.node_name for pod, _ in pods)

    plane, executor, _ = plane_with()
    plane.restore(job, None, pods)
    plane.settle()
    submit(plane, "second")
    assert executor.started == []  # the GPUs are still held by the pods being stopped
    plane.state.check_invariants()
    plane.pod_stopped("default/first-worker-0")
    plane.pod_stopped("default/first-worker-1")
    plane.settle()
    assert executor.started == ["second-worker-0", "second-worker-1"]
    assert not any(key.startswith("default/first-") for key in plane.state.jobs)
    plane.state.check_invariants()
