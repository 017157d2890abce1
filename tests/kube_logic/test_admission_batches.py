"""New Jobs are admitted in bounded batches, in the order they came (`JobWatch.admit`): a controller starting on
thousands of waiting jobs places a batch and writes its pods before it places the rest."""

from __future__ import annotations

from typing import Any

from caldera.backends.kube.client import JSON
from caldera.core import objects as o
from caldera.scheduler.scheduler import Scheduler
from caldera.system.control import ControlPlane
from caldera.system.kubejobs import BATCH_PODS, JobWatch
from caldera.testing.builders import make_node
from caldera.utils.clock import ManualClock


class Starts:
    """An executor that only notes what the plane started."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def start(self, pod: o.Pod, node: o.Node) -> None:
        self.started.append(pod.name)

    def stop(self, pod: o.Pod) -> None:
        pass


def job(i: int, replicas: int = 1) -> JSON:
    template = {"spec": {"containers": [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}
    return {
        "apiVersion": o.JOB_API,
        "kind": "Job",
        "metadata": {"name": f"job{i}", "namespace": "default", "uid": f"uid-{i}", "generation": 1},
        "spec": {"minAvailable": replicas, "queue": "default", "tasks": [
            {"name": "w", "replicas": replicas, "template": template}
        ]},
    }  # fmt: skip


def watch_with(jobs: list[JSON]) -> tuple[JobWatch, ControlPlane]:
    clock = ManualClock()
    plane = ControlPlane(Scheduler(), Starts(), clock)  # type: ignore[arg-type]
    plane.add_nodes([make_node(f"n-{i}", resources={"cpu": "64"}) for i in range(64)])
    plane.settle()
    api: dict[str, dict[str, JSON]] = {"podgroups": {}, "pods": {}, "jobs": {}}
    none: Any = None  # the pods, status and event writers: admitting a valid job uses none of them
    watch = JobWatch(plane, none, none, none, api, "caldera", clock)
    for obj in jobs:
        api["jobs"][f"default/{obj['metadata']['name']}"] = obj
        watch.on_jobs("ADDED", obj)
    return watch, plane


def test_a_burst_of_single_pod_jobs_is_admitted_in_batches_in_order() -> None:
    watch, plane = watch_with([job(i) for i in range(2 * BATCH_PODS + 100)])
    assert len(watch.new) == 2 * BATCH_PODS + 100 and not plane.jobs  # nothing admitted before the controller's turn
    sizes = []
    while watch.new:
        before = len(plane.jobs)
        watch.admit()
        sizes.append(len(plane.jobs) - before)
    assert sizes == [BATCH_PODS, BATCH_PODS, 100]
    assert list(plane.jobs)[:3] == ["default/job0", "default/job1", "default/job2"]  # in the order they came


def test_a_gang_larger_than_the_batch_is_admitted_whole() -> None:
    watch, plane = watch_with([job(0, replicas=64), job(1, replicas=64)])
    watch.admit(pods=32)
    assert list(plane.jobs) == ["default/job0"]
    assert plane.jobs["default/job0"].spec.min_available == 64
