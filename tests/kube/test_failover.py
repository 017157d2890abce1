"""`caldera controller` dying: a restarted one rebuilds from the API server and finishes every job, binding each
pod once; of two replicas only the Lease holder acts, and the other takes over when it is killed.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from caldera.backends.kube.client import KubeError, resource_path
from caldera.testing.kube import FakeNode, add_nodes, delete_nodes, install_volcano_crds
from caldera.testing.kube.calderactl import lease_holder, start_caldera
from caldera.testing.waiting import wait_until
from caldera.utils.clock import SystemClock

from .volcanojobs import (
    JOBS,
    PODGROUPS,
    events_of,
    kubectl_create,
    operator_pod,
    podgroup,
    task,
    volcano_job,
    wait_phase,
)

pytestmark = pytest.mark.kube
CLOCK = SystemClock()


@pytest.fixture
def nodes(plane, request) -> Iterator[str]:
    """Eight nodes of 8 CPUs: 64 one-CPU workers at a time."""
    label = request.node.name.replace("_", "-")[:40].strip("-")
    made = [FakeNode(f"{label}-{i}", cpu="8", memory="64Gi", labels={"test": label}) for i in range(8)]
    add_nodes(plane, made)
    yield label
    delete_nodes(plane, [n.name for n in made])


class PodHistory:
    """Every incarnation (uid) of every pod of a namespace and each node it was ever bound to (a watch thread)."""

    def __init__(self, plane, namespace: str) -> None:
        self.uids: dict[str, set[str]] = {}
        self.nodes: dict[str, set[str]] = {}
        self.condition = threading.Condition()
        self.error: BaseException | None = None
        self._plane, self._path = plane, resource_path("v1", "pods", namespace=namespace)
        self._version = plane.kube.list_all(self._path)[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PodHistory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def bound(self) -> int:
        return sum(1 for nodes in self.nodes.values() if nodes)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for kind, pod in self._plane.kube.watch(self._path, resource_version=self._version, timeout_seconds=5):
                    self._version = pod["metadata"]["resourceVersion"]
                    if kind != "BOOKMARK":
                        with self.condition:
                            name = pod["metadata"]["name"]
                            self.uids.setdefault(name, set()).add(pod["metadata"]["uid"])
                            node = self.nodes.setdefault(name, set())
                            if pod["spec"].get("nodeName"):
                                node.add(pod["spec"]["nodeName"])
                            self.condition.notify_all()
                    if self._stop.is_set():
                        return
        except KubeError as e:
            self.error = e


def kill(plane, name: str) -> None:
    process = plane.processes[name]
    os.kill(process.pid, signal.SIGKILL)
    wait_until(lambda: not process.running, 30, f"{name} to die", interval=0.05)


def test_a_controller_killed_with_jobs_in_flight_is_replaced_and_binds_each_pod_once(plane, namespace, nodes):
    install_volcano_crds(plane)
    start_caldera(plane, name="caldera-restarted")
    jobs = [volcano_job(f"j{i}", task("worker", 2, nodes, seconds=4)) for i in range(50)]
    try:
        with PodHistory(plane, namespace) as history:
            for job in jobs:
                plane.kube.create(resource_path(*JOBS, namespace=namespace), job)
            wait_until(lambda: history.bound() >= 20, 120, "20 pods bound", condition=history.condition)
            kill(plane, "caldera-restarted")
            start_caldera(plane, name="caldera-restarted")  # the same identity holds its Lease again at once
            for i in range(50):
                wait_phase(plane, namespace, f"j{i}", "Completed", 300)
            with history.condition:
                assert history.error is None
                assert len(history.uids) == 100
                twice = {name: uids for name, uids in history.uids.items() if len(uids) != 1}
                assert twice == {}  # no pod was created again
                rebound = {name: nodes for name, nodes in history.nodes.items() if len(nodes) != 1}
                assert rebound == {}  # and each was bound once
    finally:
        plane.stop_process("caldera-restarted")


@pytest.mark.parametrize("group_gone", [False, True], ids=["with-its-podgroup", "its-podgroup-deleted"])
def test_a_restarted_controller_counts_other_operators_pods_and_binds_what_waits(plane, namespace, nodes, group_gone):
    """Another operator's gang fills the eight nodes; the controller is killed, a pod of its own is made meanwhile
    (and the gang's PodGroup deleted, its pods left running), and the new controller neither binds the gang again
    nor places the newcomer in room that is not there."""
    install_volcano_crds(plane)
    start_caldera(plane, name="caldera-operators")
    pods = resource_path("v1", "pods", namespace=namespace)
    try:
        with PodHistory(plane, namespace) as history:
            plane.kube.create(resource_path(*PODGROUPS, namespace=namespace), podgroup("full", 8))
            for i in range(8):
                plane.kube.create(pods, operator_pod(f"full-{i}", nodes, group="full", gpus=0, cpu="8"))
            wait_until(lambda: history.bound() == 8, 120, "the gang on all eight nodes", condition=history.condition)
            kill(plane, "caldera-operators")
            if group_gone:
                plane.kube.delete(resource_path(*PODGROUPS, namespace=namespace, name="full"))
            late = plane.kube.create(pods, operator_pod("late", nodes, gpus=0, cpu="1"))
            start_caldera(plane, name="caldera-operators")
            # Its PodGroup is written with the phase the new controller's first look gave it, after that turn's
            # bindings: no room, so the pod is not bound.
            group = resource_path(*PODGROUPS, namespace=namespace, name=f"podgroup-{late['metadata']['uid']}")
            wait_until(lambda: _exists(plane, group), 120, "the newcomer's PodGroup", interval=0.2)
            with history.condition:
                assert not history.nodes.get("late")
            plane.kube.delete(f"{pods}/full-0", grace_period_seconds=0)
            wait_until(lambda: history.nodes.get("late"), 120, "the newcomer bound", condition=history.condition)
            with history.condition:
                assert history.error is None
                rebound = {name: nodes for name, nodes in history.nodes.items() if len(nodes) != 1}
                assert rebound == {}  # each bound once
    finally:
        plane.stop_process("caldera-operators")


def _exists(plane, path: str) -> bool:
    try:
        plane.kube.get(path)
    except KubeError:
        return False
    return True


def scheduled_by(plane, namespace: str, pod: str) -> set[str]:
    return {e.get("reportingInstance", "") for e in events_of(plane, namespace, pod) if e["reason"] == "Scheduled"}


def test_of_two_replicas_only_the_leader_binds_and_the_other_takes_over(plane, namespace, nodes):
    install_volcano_crds(plane)
    start_caldera(plane, name="replica-a")
    start_caldera(plane, name="replica-b", wait_for_lease=False)
    try:
        kubectl_create(plane, namespace, volcano_job("first", task("worker", 2, nodes, seconds=1)))
        wait_phase(plane, namespace, "first", "Completed", 120)
        for i in range(2):
            wait_until(
                lambda i=i: scheduled_by(plane, namespace, f"first-worker-{i}"), 30, "a Scheduled event", interval=0.2
            )
            assert scheduled_by(plane, namespace, f"first-worker-{i}") == {"replica-a"}
        assert lease_holder(plane) == "replica-a"
        killed = CLOCK.monotonic()
        kill(plane, "replica-a")
        wait_until(lambda: lease_holder(plane) == "replica-b", 60, "replica-b to take the lease", interval=0.05)
        took_over = CLOCK.monotonic() - killed
        kubectl_create(plane, namespace, volcano_job("second", task("worker", 2, nodes, seconds=1)))
        wait_phase(plane, namespace, "second", "Completed", 120)
        acting = CLOCK.monotonic() - killed
        for i in range(2):
            wait_until(
                lambda i=i: scheduled_by(plane, namespace, f"second-worker-{i}"), 30, "a Scheduled event", interval=0.2
            )
            assert scheduled_by(plane, namespace, f"second-worker-{i}") == {"replica-b"}
        print(f"\ntakeover: lease held by the standby {took_over:.1f}s after the leader was killed; "
              f"a new job Completed {acting:.1f}s after it")  # fmt: skip
    finally:
        plane.stop_process("replica-b")
        plane.stop_process("replica-a")
