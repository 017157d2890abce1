"""Elastic jobs in the control plane: admission defaults, pods re-created in place, scaling, completion."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from caldera.core import objects as o
from caldera.core.elastic import job_id, launcher_env, max_key, max_replicas, scale_target
from caldera.core.errors import ValidationError
from caldera.core.jobmanifest import parse_job
from caldera.scheduler.scheduler import Scheduler
from caldera.system.control import ControlPlane
from caldera.testing.builders import make_node
from caldera.utils.clock import ManualClock


class HandExecutor:
    """Starts and stops nothing until the test says so; remembers what it was asked."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.stopping: list[str] = []

    def start(self, pod: o.Pod, node: o.Node) -> None:
        self.started.append(pod.name)

    def stop(self, pod: o.Pod) -> None:
        self.stopping.append(pod.name)


def plane_with(gpus: int = 4) -> tuple[ControlPlane, HandExecutor, ManualClock]:
    executor, clock = HandExecutor(), ManualClock()
    plane = ControlPlane(Scheduler(), executor, clock)
    plane.add_nodes([make_node("n-0", resources={"cpu": "16", "nvidia.com/gpu": str(gpus)})])
    return plane, executor, clock


def elastic(name: str = "el", *, replicas: int = 3, min_available: int = 2, **task_fields: Any) -> o.Job:
    """A job of one task `worker` (one GPU a pod) with `minAvailable` of `replicas`."""
    container = {"name": "w", "image": "x", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}
    worker = {
        "name": "worker",
        "replicas": replicas,
        "minAvailable": min_available,
        "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        **task_fields,
    }
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"tasks": [worker]},
    }
    return parse_job(doc, "test")


def policy(action: str, event: str) -> dict[str, str]:
    return {"action": action, "event": event}


def run(plane: ControlPlane, job: o.Job) -> o.Job:
    plane.submit(job)
    plane.settle()
    for pod in plane.job_pods[job.key].values():
        if pod.node_name:
            pod.status.phase = o.POD_RUNNING
    plane._request(job.key, _sync())  # the executor reported them running
    plane.settle()
    return plane.jobs[job.key]


def _sync() -> Any:
    from caldera.controller import Request
    from caldera.controller.events import OUT_OF_SYNC_EVENT

    return Request(event=OUT_OF_SYNC_EVENT)


def names(plane: ControlPlane, job: o.Job) -> list[str]:
    return sorted(plane.job_pods[job.key])


def test_admission_marks_the_task_elastic_and_adds_pod_level_recovery() -> None:
    plane, _, _ = plane_with()
    job = elastic()
    plane.submit(job)
    assert job.metadata.annotations[max_key("worker")] == "3"
    (worker,) = job.spec.tasks
    assert [(p.action, p.events) for p in worker.policies] == [("RestartPod", ("PodFailed", "PodEvicted"))]
    env = launcher_env(job, "worker", "el-worker-1", "127.0.0.1:2379")
    assert env["CALDERA_ELASTIC_NP"] == env["PADDLE_ELASTIC_NP"] == "2:3"
    assert (
        env["CALDERA_ELASTIC_JOB_ID"] == env["PADDLE_ELASTIC_JOB_ID"] == job_id(job) == f"default-el-{job.metadata.uid}"
    )
    assert env["CALDERA_POD_NAME"] == "el-worker-1"


def test_a_policy_of_the_user_for_pod_failures_is_kept() -> None:
    plane, _, _ = plane_with()
    job = elastic(policies=[policy("RestartJob", "PodFailed")])
    plane.submit(job)
    (worker,) = job.spec.tasks
    assert [(p.action, p.events) for p in worker.policies] == [
        ("RestartJob", ("PodFailed",)),
        ("RestartPod", ("PodEvicted",)),
    ]


def test_a_job_with_all_replicas_required_is_not_elastic() -> None:
    plane, _, _ = plane_with()
    job = elastic(min_available=3)
    plane.submit(job)
    assert max_key("worker") not in job.metadata.annotations
    assert launcher_env(job, "worker", "el-worker-0", "x:1") == {}


def test_a_failed_pod_comes_back_under_its_name_and_the_job_is_not_restarted() -> None:
    plane, executor, clock = plane_with()
    job = run(plane, elastic())
    assert job.status.phase == o.RUNNING
    clock.advance(5)
    plane.pod_exited("default/el-worker-1", 137)
    plane.settle()
    # A failed pod has no process left to stop: it is deleted and re-created at once, the others untouched.
    assert executor.stopping == []
    assert executor.started.count("el-worker-1") == 2
    assert names(plane, job) == ["el-worker-0", "el-worker-1", "el-worker-2"]
    assert (job.status.phase, job.status.retry_count, job.status.pod_retries) == (o.RUNNING, 0, {"el-worker-1": 1})
    assert job.status.to_dict()["podRetries"] == {"el-worker-1": 1}


def test_after_max_retry_replacements_a_failure_costs_the_job_a_retry() -> None:
    plane, _, _ = plane_with()
    job = run(plane, elastic(maxRetry=1))
    plane.pod_exited("default/el-worker-0", 1)
    plane.settle()
    assert job.status.pod_retries == {"el-worker-0": 1}
    plane.job_pods[job.key]["el-worker-0"].status.phase = o.POD_RUNNING
    plane.pod_exited("default/el-worker-0", 1)  # a second failure: the task's maxRetry (1) is used up
    plane.settle()
    assert job.status.retry_count == 1
    assert o.RESTARTING in [phase for phase, _ in job.status.conditions]


def test_scale_in_removes_pending_pods_first_then_the_highest_running() -> None:
    plane, executor, _ = plane_with(gpus=3)  # room for 3 of 4
    job = run(plane, elastic(replicas=4))
    assert sorted(executor.started) == ["el-worker-0", "el-worker-1", "el-worker-2"]  # worker-3 waits for room
    plane.scale(job.key, "worker", 3)
    plane.settle()
    assert executor.stopping == []  # the pending one goes (it has no process), not a training one
    assert names(plane, job) == ["el-worker-0", "el-worker-1", "el-worker-2"]
    plane.scale(job.key, "worker", 2)
    plane.settle()
    assert executor.stopping == ["el-worker-2"]
    plane.pod_stopped("default/el-worker-2")
    plane.settle()
    assert names(plane, job) == ["el-worker-0", "el-worker-1"]
    assert job.spec.tasks[0].replicas == 2
    assert plane.events[-1].kind in {"PodDeleted", "Scaled"}


def test_scale_out_fills_the_lowest_free_indices() -> None:
    plane, _, _ = plane_with(gpus=8)
    job = run(plane, elastic(replicas=4))
    plane.scale(job.key, "worker", 2)
    plane.settle()
    for name in ("default/el-worker-3", "default/el-worker-2"):
        plane.pod_stopped(name)
    plane.settle()
    # A pod in the middle goes away for good (its replacement budget is not the point here).
    plane.scale(job.key, "worker", 4)
    plane.settle()
    assert names(plane, job) == ["el-worker-0", "el-worker-1", "el-worker-2", "el-worker-3"]


@pytest.mark.parametrize(("replicas", "why"), [(1, "outside task worker's range 2:3"), (4, "outside")])
def test_scale_outside_the_range_is_refused(replicas: int, why: str) -> None:
    plane, _, _ = plane_with()
    job = run(plane, elastic())
    with pytest.raises(ValidationError, match=why):
        plane.scale(job.key, "worker", replicas)
    assert job.spec.tasks[0].replicas == 3


def test_a_job_that_is_not_elastic_cannot_be_scaled() -> None:
    plane, _, _ = plane_with()
    job = run(plane, elastic(min_available=3))
    with pytest.raises(ValidationError, match="the job is not elastic"):
        plane.scale(job.key, "worker", 2)


def test_training_done_with_pods_never_placed_completes_the_job() -> None:
    plane, executor, _ = plane_with(gpus=2)
    job = run(plane, elastic(replicas=3))
    assert sorted(executor.started) == ["el-worker-0", "el-worker-1"]
    plane.pod_exited("default/el-worker-0", 0)
    plane.pod_exited("default/el-worker-1", 0)
    plane.settle()
    assert (job.status.phase, job.status.reason) == (o.COMPLETED, "ElasticFinished")
    assert names(plane, job) == ["el-worker-0", "el-worker-1"]  # the pod that never ran is removed
    assert "el-worker-2" not in executor.started


def test_a_pod_placed_after_the_others_finished_completes_the_job_when_it_exits() -> None:
    """Its launcher finds the training done and exits 0 (tests/launcher); the job then completes."""
    plane, executor, _ = plane_with(gpus=2)
    job = run(plane, elastic(replicas=3))
    plane.pod_exited("default/el-worker-0", 0)
    plane.settle()
    assert "el-worker-2" in executor.started  # grown into the freed GPU
    plane.pod_exited("default/el-worker-1", 0)
    plane.settle()
    assert job.status.phase == o.RUNNING
    plane.pod_exited("default/el-worker-2", 0)
    plane.settle()
    assert job.status.phase == o.COMPLETED


def test_preemption_takes_an_elastic_job_s_pods_above_its_minimum_and_does_not_restart_it() -> None:
    plane, executor, _ = plane_with(gpus=4)
    plane.add_priority_class(o.PriorityClass("high", 1000))
    plane.add_priority_class(o.PriorityClass("low", 10))
    low = elastic("low", replicas=4, min_available=2)
    low.spec = replace(low.spec, priority_class_name="low")
    low = run(plane, low)
    assert len(executor.started) == 4  # grown to its maximum on the idle node

    high = elastic("high", replicas=2, min_available=2)
    high.spec = replace(high.spec, priority_class_name="high")
    plane.submit(high)
    plane.settle()
    victims = sorted(name for name in executor.stopping if name.startswith("low-"))
    assert len(victims) == 2  # only the two pods above minAvailable 2
    for name in victims:
        plane.pod_stopped(f"default/{name}")
    plane.settle()
    assert sorted(n for n in executor.started if n.startswith("high-")) == ["high-worker-0", "high-worker-1"]
    assert (low.status.phase, low.status.retry_count) == (o.RUNNING, 0)
    waiting = [p.name for p in plane.job_pods[low.key].values() if p.status.phase == o.POD_PENDING]
    assert sorted(waiting) == victims  # re-created, waiting for room to grow again


def test_scale_target_and_the_most_pods_a_task_may_have() -> None:
    plane, _, _ = plane_with()
    job = elastic(replicas=3)
    plane.submit(job)
    (worker,) = job.spec.tasks
    assert (scale_target(job, None), scale_target(job, "other")) == ("worker", "other")
    assert max_replicas(job, worker) == 3
    plane.scale(job.key, "worker", 2)
    assert max_replicas(job, job.spec.tasks[0]) == 3  # scaled in: indices up to the maximum stay possible
    plain = elastic("plain", min_available=3)
    plane.submit(plain)
    assert max_replicas(plain, plain.spec.tasks[0]) == 3 and scale_target(plain, None) == "worker"
