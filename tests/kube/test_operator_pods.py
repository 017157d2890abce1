"""Pods of other operators on the real control plane: pods naming caldera's schedulerName that no Volcano Job owns
are scheduled as Volcano schedules them: as a gang of the PodGroup they name, or one by one in a PodGroup made for
each. Four one-GPU nodes per test; every pod asks for one GPU.
"""

from __future__ import annotations

import pytest

from caldera.backends.kube.client import JSON, NotFound, resource_path
from caldera.testing.waiting import wait_until

from .volcanojobs import PODGROUPS, events_of, kubectl_create, operator_pod, podgroup, task, volcano_job

pytestmark = pytest.mark.kube


def create(plane, namespace: str, resource: tuple[str, str], body: JSON) -> JSON:
    return plane.kube.create(resource_path(*resource, namespace=namespace), body)


def pod(plane, namespace: str, name: str) -> JSON | None:
    try:
        return plane.kube.get(resource_path("v1", "pods", namespace=namespace, name=name))
    except NotFound:
        return None


def node_of(plane, namespace: str, name: str) -> str:
    found = pod(plane, namespace, name)
    return str((found or {}).get("spec", {}).get("nodeName") or "")


def group_status(plane, namespace: str, name: str) -> JSON:
    try:
        return plane.kube.get(resource_path(*PODGROUPS, namespace=namespace, name=name)).get("status") or {}
    except NotFound:
        return {}


POD = ("v1", "pods")


def groups_of(plane, namespace: str, job: str) -> list[JSON]:
    listed = plane.kube.list_all(resource_path(*PODGROUPS, namespace=namespace))[0]
    return [g for g in listed if g["metadata"]["name"].startswith(f"{job}-")]


def test_pods_naming_another_operators_podgroup_are_placed_as_its_gang(plane, caldera, namespace, nodes):
    create(plane, namespace, PODGROUPS, podgroup("trainer", 3, queue="default"))
    for i in range(2):
        create(plane, namespace, POD, operator_pod(f"trainer-{i}", nodes, group="trainer"))
    # Two of the three members: the group is admitted (Inqueue: its resources are there) but not placed. A turn
    # writes its pods before its statuses, so a binding of that turn would be seen by now.
    wait_until(
        lambda: group_status(plane, namespace, "trainer").get("phase") == "Inqueue",
        60,
        "the PodGroup Inqueue with two of its three members",
        interval=0.2,
    )
    assert node_of(plane, namespace, "trainer-0") == node_of(plane, namespace, "trainer-1") == ""
    create(plane, namespace, POD, operator_pod("trainer-2", nodes, group="trainer"))
    wait_until(
        lambda: all(node_of(plane, namespace, f"trainer-{i}") for i in range(3)),
        60,
        "the whole gang bound",
        interval=0.2,
    )
    placed = {node_of(plane, namespace, f"trainer-{i}") for i in range(3)}
    assert len(placed) == 3 and all(n.startswith(f"{nodes}-") for n in placed)  # one GPU each: three nodes
    wait_until(
        lambda: group_status(plane, namespace, "trainer").get("phase") == "Running",
        60,
        "the PodGroup's phase Running",
        interval=0.2,
    )
    assert group_status(plane, namespace, "trainer")["running"] == 3
    assert "Scheduled" in {e["reason"] for e in events_of(plane, namespace, "trainer-0")}
    # caldera did not take the group over: it is still the operator's, owned by nobody caldera made.
    group = plane.kube.get(resource_path(*PODGROUPS, namespace=namespace, name="trainer"))
    assert not group["metadata"].get("ownerReferences") and group["spec"]["minMember"] == 3


def test_a_bare_pod_gets_a_podgroup_of_its_own_and_is_placed(plane, caldera, namespace, nodes):
    made = create(plane, namespace, POD, operator_pod("alone", nodes))
    uid = made["metadata"]["uid"]
    wait_until(lambda: node_of(plane, namespace, "alone"), 60, "the bare pod bound", interval=0.2)
    group = plane.kube.get(resource_path(*PODGROUPS, namespace=namespace, name=f"podgroup-{uid}"))
    assert group["spec"]["minMember"] == 1 and group["spec"]["queue"] == "default"
    assert [(r["kind"], r["uid"]) for r in group["metadata"]["ownerReferences"]] == [("Pod", uid)]
    # Deleted with its pod (the garbage collector, through the ownerReference).
    plane.kube.delete(resource_path("v1", "pods", namespace=namespace, name="alone"), grace_period_seconds=0)
    wait_until(
        lambda: not group_status(plane, namespace, f"podgroup-{uid}") and pod(plane, namespace, "alone") is None,
        60,
        "the pod and its PodGroup gone",
        interval=0.2,
    )


def test_operator_pods_and_volcano_jobs_share_the_nodes(plane, caldera, namespace, nodes):
    """A gang of another operator's pods holds its GPUs: a Volcano Job asking for the rest is placed beside it, and
    one asking for more waits until the operator deletes its pods."""
    create(plane, namespace, PODGROUPS, podgroup("holder", 3))
    for i in range(3):
        create(plane, namespace, POD, operator_pod(f"holder-{i}", nodes, group="holder"))
    wait_until(
        lambda: all(node_of(plane, namespace, f"holder-{i}") for i in range(3)), 60, "holder bound", interval=0.2
    )
    kubectl_create(plane, namespace, volcano_job("pair", task("worker", 2, nodes, seconds=None, gpus=1)))
    # Its PodGroup is written after the scheduler's first look at it (created with the phase it was given, its
    # pods after it in the same turn): one GPU left for two workers, neither is bound.
    wait_until(lambda: groups_of(plane, namespace, "pair"), 60, "the Volcano Job's PodGroup", interval=0.2)
    assert not node_of(plane, namespace, "pair-worker-0") and not node_of(plane, namespace, "pair-worker-1")
    plane.kube.delete(resource_path("v1", "pods", namespace=namespace, name="holder-0"), grace_period_seconds=0)
    wait_until(
        lambda: node_of(plane, namespace, "pair-worker-0") and node_of(plane, namespace, "pair-worker-1"),
        60,
        "the Volcano Job placed once the operator's pod went",
        interval=0.2,
    )


def test_pods_whose_podgroup_is_deleted_keep_their_nodes_until_they_go(plane, caldera, namespace, nodes):
    create(plane, namespace, PODGROUPS, podgroup("short-lived", 4))
    for i in range(4):
        create(plane, namespace, POD, operator_pod(f"short-lived-{i}", nodes, group="short-lived"))
    wait_until(lambda: all(node_of(plane, namespace, f"short-lived-{i}") for i in range(4)), 60, "the gang bound",
               interval=0.2)  # fmt: skip
    plane.kube.delete(resource_path(*PODGROUPS, namespace=namespace, name="short-lived"))
    late = create(plane, namespace, POD, operator_pod("late", nodes))
    # Its PodGroup is written after the scheduler's first look at it, with that turn's bindings before it.
    wait_until(lambda: group_status(plane, namespace, f"podgroup-{late['metadata']['uid']}"), 60, "its PodGroup",
               interval=0.2)  # fmt: skip
    assert not node_of(plane, namespace, "late")  # the four GPUs are still held
    plane.kube.delete(resource_path("v1", "pods", namespace=namespace, name="short-lived-0"), grace_period_seconds=0)
    wait_until(lambda: node_of(plane, namespace, "late"), 60, "the newcomer bound once a GPU is free", interval=0.2)
