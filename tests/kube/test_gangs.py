"""Why gangs exist, on a real control plane: seed 002's case with the schedulers users would otherwise pick.

Four nodes of one GPU each; two training jobs of four workers each, each worker one GPU, and a worker
only does useful work once all four of its job's workers run. kube-scheduler places pods one by one:
with the two jobs' pods arriving interleaved it binds two workers of each, and neither job can ever
run (its bound workers wait for peers that have no GPU left). Volcano places a job's four workers all
or nothing: one job runs whole, ends, and then the other runs whole; so does caldera (`caldera controller`),
given the very same Volcano Jobs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from caldera.backends.kube.client import JSON, KubeError, resource_path
from caldera.testing.kube import (
    FakeNode,
    add_nodes,
    delete_nodes,
    install_volcano_crds,
    run_for,
    start_kube_scheduler,
    start_volcano,
    volcano_job_defaults,
)
from caldera.testing.kube.calderactl import start_caldera
from caldera.testing.waiting import wait_until

pytestmark = pytest.mark.kube

JOBS = ("tfjob1", "tfjob2")
WORKERS = 4


@pytest.fixture
def gpu_nodes(plane, request) -> Iterator[str]:
    """Four one-GPU nodes labelled for this test only; the label value is yielded."""
    label = request.node.name.replace("_", "-")[:40].strip("-")
    nodes = [FakeNode(f"{label}-{i}", cpu="8", memory="32Gi", gpus=1, labels={"seed002": label}) for i in range(4)]
    add_nodes(plane, nodes)
    yield label
    delete_nodes(plane, [n.name for n in nodes])


def worker(job: str, index: int, label: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{job}-worker-{index}", "labels": {"job": job}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"seed002": label},
            "containers": [{"name": "worker", "image": "tf:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }


def pods_of(plane, namespace: str) -> list[JSON]:
    return plane.kube.list_all(resource_path("v1", "pods", namespace=namespace))[0]


def unschedulable(pod: JSON) -> bool:
    conditions = pod["status"].get("conditions") or []
    return any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions)


def test_kube_scheduler_binds_part_of_each_job_and_neither_can_run(plane, namespace, gpu_nodes):
    start_kube_scheduler(plane)
    try:
        pods = resource_path("v1", "pods", namespace=namespace)
        for index in range(WORKERS):  # the two jobs' pods arrive interleaved, as two operators create them
            for job in JOBS:
                plane.kube.create(pods, worker(job, index, gpu_nodes))

        def settled() -> bool:
            listed = pods_of(plane, namespace)
            bound = [p for p in listed if p["spec"].get("nodeName")]
            return len(bound) == 4 and sum(unschedulable(p) for p in listed) == 4

        wait_until(settled, 120, "4 pods bound and the other 4 found unschedulable", interval=0.2)
        listed = pods_of(plane, namespace)
        bound = {job: sum(1 for p in listed if p["spec"].get("nodeName") and p["metadata"]["labels"]["job"] == job)
                 for job in JOBS}  # fmt: skip
        assert sorted(bound.values()) == [2, 2], bound  # part of each: every GPU is held by a job that cannot run
        assert {p["spec"]["nodeName"] for p in listed if p["spec"].get("nodeName")} == {
            f"{gpu_nodes}-{i}" for i in range(4)
        }
    finally:
        plane.stop_process("kube-scheduler")


class Timeline:
    """Each pod's binding and ending, in the order the API server reports them (a watch thread)."""

    def __init__(self, plane, namespace: str) -> None:
        self.events: list[tuple[str, str]] = []  # (what, job): what is "bound" or "done"
        self._seen: set[tuple[str, str]] = set()
        self._path = resource_path("v1", "pods", namespace=namespace)
        self._plane = plane
        self._stop = threading.Event()
        self._version = plane.kube.list_all(self._path)[1]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.condition = threading.Condition()
        self.error: BaseException | None = None

    def __enter__(self) -> Timeline:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for kind, pod in self._plane.kube.watch(self._path, resource_version=self._version, timeout_seconds=5):
                    self._version = pod["metadata"]["resourceVersion"]
                    if kind != "BOOKMARK":
                        self._note(pod)
                    if self._stop.is_set():
                        return
        except KubeError as e:
            self.error = e
            with self.condition:
                self.condition.notify_all()

    def _note(self, pod: JSON) -> None:
        job = pod["metadata"]["labels"].get("volcano.sh/job-name", "")
        name = pod["metadata"]["name"]
        with self.condition:
            if pod["spec"].get("nodeName") and ("bound", name) not in self._seen:
                self._seen.add(("bound", name))
                self.events.append(("bound", job))
            if pod["status"].get("phase") == "Succeeded" and ("done", name) not in self._seen:
                self._seen.add(("done", name))
                self.events.append(("done", job))
            self.condition.notify_all()

    def count(self, what: str) -> int:
        return sum(1 for w, _ in self.events if w == what)


def volcano_job(name: str, label: str) -> JSON:
    template = worker(name, 0, label)
    template["metadata"] = {"annotations": run_for(3)}  # a worker trains for 3 s once all four run
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"tasks": [{"name": "worker", "replicas": WORKERS, "template": template}]},
    }
    return volcano_job_defaults(job)


def one_whole_job_then_the_other(plane, namespace: str, label: str) -> None:
    """Create both jobs and check that one runs whole and ends before any worker of the other is bound."""
    jobs = resource_path("batch.volcano.sh/v1alpha1", "jobs", namespace=namespace)
    with Timeline(plane, namespace) as timeline:
        for name in JOBS:
            plane.kube.create(jobs, volcano_job(name, label))
        wait_until(
            lambda: timeline.count("done") == 2 * WORKERS or timeline.error is not None,
            180,
            "both jobs' workers to finish",
            condition=timeline.condition,
        )
        assert timeline.error is None
        events = list(timeline.events)
    first = events[0][1]
    second = next(job for job in JOBS if job != first)
    binds = [job for what, job in events if what == "bound"]
    assert binds == [first] * WORKERS + [second] * WORKERS  # one whole job, then the other
    last_done_of_first = max(i for i, (what, job) in enumerate(events) if (what, job) == ("done", first))
    first_bind_of_second = events.index(("bound", second))
    assert first_bind_of_second > last_done_of_first  # the second waited for the GPUs, holding none
    for name in JOBS:
        wait_until(
            lambda name=name: (
                plane.kube.get(f"{jobs}/{name}").get("status", {}).get("state", {}).get("phase") == "Completed"
            ),
            60,
            f"{name} to be Completed",
            interval=0.2,
        )


@pytest.mark.volcano
def test_volcano_runs_one_whole_job_then_the_other(plane, namespace, gpu_nodes):
    if not plane.tools.has_volcano():
        pytest.skip("Volcano's binaries are not built: run `make volcano-tools` (docs/kubernetes-harness.md)")
    install_volcano_crds(plane)
    start_volcano(plane)
    try:
        one_whole_job_then_the_other(plane, namespace, gpu_nodes)
    finally:
        plane.stop_process("vc-scheduler")
        plane.stop_process("vc-controller-manager")


def test_caldera_runs_one_whole_job_then_the_other(plane, namespace, gpu_nodes):
    install_volcano_crds(plane)
    start_caldera(plane)
    try:
        one_whole_job_then_the_other(plane, namespace, gpu_nodes)
    finally:
        plane.stop_process("caldera-controller")
