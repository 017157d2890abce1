"""`caldera controller` sharing a cluster: priority preemption and queue reclaim move whole gangs, a queue's
capability caps it, a Closed queue takes no new job. Four one-GPU nodes per test; every worker asks for one GPU.
"""

from __future__ import annotations

import pytest

from caldera.backends.kube.client import JSON, resource_path
from caldera.scheduler.config import VOLCANO_SHAPE_CONFIG
from caldera.testing.kube import install_volcano_crds
from caldera.testing.kube.calderactl import start_caldera
from caldera.testing.waiting import wait_until

from .volcanojobs import (
    COMMANDS,
    PODGROUPS,
    QUEUES,
    events_of,
    kubectl_create,
    operator_pod,
    podgroup,
    pods_of,
    task,
    volcano_job,
    wait_phase,
)

pytestmark = pytest.mark.kube


@pytest.fixture(scope="module")
def caldera(plane, tmp_path_factory):
    """The controller on Volcano's plugins with preempt and reclaim (the built-in configuration before
    caldera-default): these tests pin Volcano's semantics (enqueue admission, reclaim of any gang)."""
    conf = tmp_path_factory.mktemp("volcano-shape") / "volcano-scheduler.conf"
    conf.write_text(VOLCANO_SHAPE_CONFIG, encoding="utf-8")
    install_volcano_crds(plane)
    process = start_caldera(plane, args=[f"--scheduler-config={conf}"])
    yield process
    plane.stop_process("caldera-controller")


def gang(name: str, workers: int, label: str, **spec: object) -> JSON:
    """A gang of one-GPU workers that run until deleted."""
    return volcano_job(name, task("worker", workers, label, seconds=None, gpus=1), **spec)


def bound(plane, namespace: str, job: str) -> int:
    return sum(
        1
        for p in pods_of(plane, namespace, job)
        if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
    )


def make_queue(plane, name: str, **spec: object) -> None:
    body = {"apiVersion": QUEUES[0], "kind": "Queue", "metadata": {"name": name}, "spec": {"weight": 1, **spec}}
    plane.kube.create(resource_path(*QUEUES), body)
    # The controller writes every queue's status: then it has seen this one.
    wait_until(lambda: queue_state(plane, name) == "Open", 60, f"queue {name} seen by the controller", interval=0.2)


def queue_state(plane, name: str) -> str:
    return str((plane.kube.get(resource_path(*QUEUES, name=name)).get("status") or {}).get("state", ""))


def reasons(plane, namespace: str, pod: str) -> set[str]:
    return {e["reason"] for e in events_of(plane, namespace, pod)}


def priority_classes(plane) -> None:
    for name, value in (("bench-high", 1000), ("bench-low", 10)):
        if plane.kubectl("get", "priorityclass", name).returncode != 0:
            pc = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
            plane.kube.create(resource_path("scheduling.k8s.io/v1", "priorityclasses"), pc)


def test_a_high_priority_gang_preempts_a_whole_low_gang(plane, caldera, namespace, nodes):
    priority_classes(plane)
    kubectl_create(plane, namespace, gang("low", 4, nodes, priorityClassName="bench-low"))
    wait_until(lambda: bound(plane, namespace, "low") == 4, 120, "the low gang to run", interval=0.2)
    kubectl_create(plane, namespace, gang("high", 2, nodes, priorityClassName="bench-high"))
    wait_until(lambda: bound(plane, namespace, "high") == 2, 120, "the high gang to run", interval=0.2)
    assert bound(plane, namespace, "low") == 0  # the whole low gang went, not two of its four workers
    wait_until(lambda: all("Preempted" in reasons(plane, namespace, f"low-worker-{i}") for i in range(4)), 60,
               "a Preempted event for each low worker", interval=0.2)  # fmt: skip
    assert wait_phase(plane, namespace, "high", "Running")["status"]["running"] == 2


def test_a_high_priority_gang_preempts_another_operators_whole_gang(plane, caldera, namespace, nodes):
    """Pods of another operator (their PodGroup and PriorityClass its own) are preempted as a Job's are: deleted,
    the whole gang, with a Preempted event each; their operator makes them again if it wants."""
    priority_classes(plane)
    pods = resource_path("v1", "pods", namespace=namespace)
    group = podgroup("low-op", 4, priorityClassName="bench-low")
    plane.kube.create(resource_path(*PODGROUPS, namespace=namespace), group)
    for i in range(4):
        plane.kube.create(pods, operator_pod(f"low-op-{i}", nodes, group="low-op", priorityClassName="bench-low"))

    def op_bound() -> int:
        listed = plane.kube.list_all(pods)[0]
        return sum(1 for p in listed if p["metadata"]["name"].startswith("low-op-") and p["spec"].get("nodeName"))

    wait_until(lambda: op_bound() == 4, 120, "the operator's gang to run", interval=0.2)
    kubectl_create(plane, namespace, gang("high", 2, nodes, priorityClassName="bench-high"))
    wait_until(lambda: bound(plane, namespace, "high") == 2, 120, "the high gang to run", interval=0.2)
    assert op_bound() == 0  # all four went, not two
    wait_until(lambda: all("Preempted" in reasons(plane, namespace, f"low-op-{i}") for i in range(4)), 60,
               "a Preempted event for each of the operator's pods", interval=0.2)  # fmt: skip


def test_a_queue_reclaims_its_share_by_whole_gangs(plane, caldera, namespace, nodes):
    make_queue(plane, f"{namespace}-a", reclaimable=True)
    make_queue(plane, f"{namespace}-b")
    for name in ("a1", "a2"):
        kubectl_create(plane, namespace, gang(name, 2, nodes, queue=f"{namespace}-a"))
    wait_until(lambda: bound(plane, namespace, "a1") + bound(plane, namespace, "a2") == 4, 120, "queue a to fill the nodes",
               interval=0.2)  # fmt: skip
    kubectl_create(plane, namespace, gang("b1", 2, nodes, queue=f"{namespace}-b"))
    wait_until(lambda: bound(plane, namespace, "b1") == 2, 120, "queue b to get its share", interval=0.2)
    assert sorted((bound(plane, namespace, "a1"), bound(plane, namespace, "a2"))) == [0, 2]  # one whole gang went


def test_capability_caps_a_queue(plane, caldera, namespace, nodes):
    capped = f"{namespace}-capped"
    make_queue(plane, capped, capability={"nvidia.com/gpu": "2"})
    kubectl_create(plane, namespace, gang("big", 4, nodes, queue=capped))
    kubectl_create(plane, namespace, gang("small", 2, nodes, queue=capped))
    wait_until(lambda: bound(plane, namespace, "small") == 2, 120, "the small job to run", interval=0.2)
    big = plane.kube.get(resource_path("batch.volcano.sh/v1alpha1", "jobs", namespace=namespace, name="big"))
    group = plane.kube.get(resource_path(*PODGROUPS, namespace=namespace, name=f"big-{big['metadata']['uid']}"))
    assert group["status"]["phase"] == "Pending"  # never admitted: 4 GPUs do not fit under a cap of 2
    assert pods_of(plane, namespace, "big") == []


def test_a_closed_queue_takes_no_new_job(plane, caldera, namespace, nodes):
    closed = f"{namespace}-closed"
    make_queue(plane, closed)
    command = {
        "apiVersion": COMMANDS[0],
        "kind": "Command",
        "metadata": {"name": f"close-{closed}", "namespace": namespace},
        "action": "CloseQueue",
        "target": {"apiVersion": QUEUES[0], "kind": "Queue", "name": closed, "uid": "x"},
    }
    plane.kube.create(resource_path(*COMMANDS, namespace=namespace), command)
    wait_until(lambda: queue_state(plane, closed) == "Closed", 60, "the queue to be Closed", interval=0.2)
    kubectl_create(plane, namespace, gang("late", 1, nodes, queue=closed))
    done = wait_phase(plane, namespace, "late", "Failed", 60)
    assert done["status"]["state"]["reason"] == "Rejected"
    assert "Closed" in done["status"]["state"]["message"]
    assert pods_of(plane, namespace, "late") == []
