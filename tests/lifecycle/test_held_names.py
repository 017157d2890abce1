"""A pod's name held by another pod still stopping (a deleted job's of the same name, an operator's).

Kubernetes refuses a pod whose name is held (AlreadyExists) and Volcano's controller retries: the
control plane creates the pod once the holder is gone, and the holder's end is not the new pod's.
"""

from __future__ import annotations

from typing import Any

from caldera.core import objects as o
from caldera.system.control import ControlPlane
from caldera.utils.clock import ManualClock

from .test_control_plane import HandExecutor, plane_with, submit
from .test_foreign_groups import put_group, put_pod


def test_a_job_submitted_again_while_its_old_pods_stop_waits_for_their_names() -> None:
    """Deleted, then submitted again under the same name at once: the old pods still stop under the names the
    new ones take. As Kubernetes refuses a pod whose name is held (AlreadyExists) and Volcano's controller
    retries, each new pod is created only once the old one is gone; an old pod's end is not the new one's."""
    plane, executor, clock = plane_with(gpus=4)
    submit(plane, "job")
    clock.advance(10)
    plane.delete_job("default/job")
    plane.settle()
    old_uids = {key: plane.pods[key].metadata.uid for key in executor.stopping}
    assert sorted(old_uids) == ["default/job-worker-0", "default/job-worker-1"]
    submit(plane, "job")
    assert executor.started == ["job-worker-0", "job-worker-1"]  # not re-created while the old ones hold the names
    assert {key: plane.pods[key].metadata.uid for key in old_uids} == old_uids
    assert plane.jobs["default/job"].status.phase == o.PENDING
    plane.pod_stopped("default/job-worker-0")
    plane.settle()
    plane.pod_stopped("default/job-worker-1")
    plane.settle()
    assert executor.started[2:] == ["job-worker-0", "job-worker-1"]
    new = plane.jobs["default/job"]
    assert new.status.phase == o.RUNNING
    assert all(plane.pods[key].metadata.uid != uid for key, uid in old_uids.items())
    assert all(plane.pods[key].status.phase == o.POD_RUNNING for key in old_uids)
    assert plane.attempts_of("default/job-worker-0") == 1  # the new job's pod starts clean, as on a fresh name
    plane.state.check_invariants()


def resubmitted_beside_a_stopping_pod(**first: Any) -> tuple[ControlPlane, HandExecutor, ManualClock]:
    """Job A of two pods (its spec's fields: `first`) deleted; once its worker-0 is gone (worker-1 still stopping), job B of the same name
    submitted with a gang of one: B's worker-0 starts, its worker-1 waits for A's to go."""
    plane, executor, clock = plane_with(gpus=4)
    submit(plane, "job", **first)
    clock.advance(10)
    plane.delete_job("default/job")
    plane.settle()
    plane.pod_stopped("default/job-worker-0")
    plane.settle()
    submit(plane, "job", minAvailable=1)
    return plane, executor, clock


def test_a_pod_created_after_its_groups_other_pods_ended_is_placed() -> None:
    """The new job's only started pod succeeds (its group Completed) before the old pod holding its other pod's name
    is gone: the pod created then is placed at once, not left Pending."""
    plane, executor, clock = resubmitted_beside_a_stopping_pod()
    assert executor.started[2:] == ["job-worker-0"]  # worker-1 waits for the old one's name
    clock.advance(5)
    plane.pod_exited("default/job-worker-0", 0)
    plane.settle()
    plane.pod_stopped("default/job-worker-1")
    plane.settle()
    assert executor.started[2:] == ["job-worker-0", "job-worker-1"]
    assert plane.pods["default/job-worker-1"].status.phase == o.POD_RUNNING
    plane.state.check_invariants()


def test_the_groups_of_a_name_deleted_twice_while_pods_still_stop_are_both_released() -> None:
    """A deleted, B of the same name started beside A's last stopping pod, then B deleted too: each group keeps
    its own pods' resources until they are gone, and neither is left behind."""
    plane, executor, clock = resubmitted_beside_a_stopping_pod(minAvailable=1)
    assert executor.started[2:] == ["job-worker-0"]
    clock.advance(5)
    plane.delete_job("default/job")
    plane.settle()
    groups = {key for key in plane.state.jobs if key.startswith("default/job-")}
    assert len(groups) == 2
    gpus = plane.state.dim["nvidia.com/gpu"]
    assert plane.state.used[gpus].sum() == 2000.0  # A's worker-1 and B's worker-0 still hold theirs
    plane.pod_stopped("default/job-worker-1")
    plane.settle()
    assert plane.state.used[gpus].sum() == 1000.0
    plane.pod_stopped("default/job-worker-0")
    plane.settle()
    assert plane.pods == {}
    assert not any(key.startswith("default/job-") for key in plane.state.jobs)
    plane.state.check_invariants()


def test_a_pod_whose_name_an_operators_pod_held_is_created_once_that_pod_is_gone() -> None:
    plane, executor, clock = plane_with(gpus=4)
    put_group(plane, "op", 1)
    put_pod(plane, "job-worker-0", "op")
    plane.settle()
    submit(plane, "job")
    assert list(plane.job_pods["default/job"]) == ["job-worker-1"]
    clock.advance(5)
    plane.pod_stopped("default/job-worker-0")  # the operator deleted its pod
    plane.settle()
    assert sorted(plane.job_pods["default/job"]) == ["job-worker-0", "job-worker-1"]
    assert executor.started == ["job-worker-0", "job-worker-0", "job-worker-1"]
    assert plane.jobs["default/job"].status.phase == o.RUNNING
    plane.state.check_invariants()
