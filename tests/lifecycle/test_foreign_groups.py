"""Another operator's PodGroups and pods in the control plane (`ControlPlane.put_group`, `put_pod`, `drop_group`):
scheduled as a gang like a Job's, never created, restarted or deleted but by the scheduler's evictions."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import cast

from caldera.backends.kube.client import KubeClient
from caldera.backends.kube.foreign import pod_from_api, podgroup_from_api
from caldera.core import objects as o
from caldera.system.control import ControlPlane
from caldera.system.kubepods import KubePods

from .test_control_plane import plane_with, submit


def api_group(name: str, min_member: int, **spec: object) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"minMember": min_member, **spec}}  # fmt: skip


def api_pod(name: str, group: str, gpus: int = 1, **spec: object) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                     "annotations": {"scheduling.k8s.io/group-name": group}},
        "spec": {"schedulerName": "caldera", "restartPolicy": "Never", "containers": [{"name": "c", "image": "i",
                 "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}], **spec},
        "status": {"phase": "Pending"},
    }  # fmt: skip


def put_group(plane: ControlPlane, name: str, min_member: int, **spec: object) -> str:
    pg = podgroup_from_api(api_group(name, min_member, **spec))
    plane.put_group(f"default/{pg.job}", pg)
    return f"default/{pg.job}"


def put_pod(plane: ControlPlane, name: str, group: str, **spec: object) -> o.Pod:
    pod = pod_from_api(api_pod(name, group, **spec), plane.state.priority_of)
    plane.put_pod(pod)
    return pod


def test_an_operators_gang_is_placed_only_once_all_its_members_are_there() -> None:
    plane, executor, _ = plane_with(nodes=2, gpus=1)
    put_group(plane, "op", 2)
    put_pod(plane, "op-0", "op")
    plane.settle()
    assert executor.started == []  # one of two members
    put_pod(plane, "op-1", "op")
    plane.settle()
    assert sorted(executor.started) == ["op-0", "op-1"]
    assert plane.podgroups["default/podgroup:op"].phase == o.PG_RUNNING
    plane.state.check_invariants()


def test_pods_that_came_before_their_group_wait_for_it_and_a_deleted_group_leaves_them_waiting() -> None:
    plane, executor, _ = plane_with(nodes=1, gpus=1)
    put_pod(plane, "early", "later")
    plane.settle()
    assert executor.started == []
    key = put_group(plane, "later", 1)
    plane.settle()
    assert executor.started == ["early"]

    put_pod(plane, "second", "later")  # no GPU left: it waits
    plane.settle()
    plane.drop_group(key)
    plane.settle()
    assert executor.started == ["early"] and "default/second" not in plane.state.tasks
    assert "default/early" in plane.state.tasks  # it holds its GPU until it is gone
    plane.pod_stopped("default/early")  # the operator deleted it
    plane.settle()
    assert executor.started == ["early"]  # the other has no group to be placed with
    put_group(plane, "later", 1)
    plane.settle()
    assert executor.started == ["early", "second"]
    plane.state.check_invariants()


def test_a_bound_pod_found_at_start_holds_its_node_and_is_not_bound_again() -> None:
    plane, executor, _ = plane_with(nodes=1, gpus=1)
    put_group(plane, "running", 1)
    put_pod(plane, "there", "running", nodeName="n-0")
    put_group(plane, "next", 1)
    put_pod(plane, "newcomer", "next")
    plane.settle()
    assert executor.started == []  # neither bound again nor placed beside it: one GPU
    plane.pod_exited("default/there", 0)  # Succeeded: its GPU is free
    plane.settle()
    assert executor.started == ["newcomer"]


def test_a_higher_priority_job_preempts_an_operators_whole_gang() -> None:
    plane, executor, _ = plane_with(nodes=2, gpus=1)
    plane.add_priority_class(o.PriorityClass("high", 1000))
    put_group(plane, "low", 2)
    for i in range(2):
        put_pod(plane, f"low-{i}", "low")
    plane.settle()
    submit(plane, "urgent", priorityClassName="high")
    assert sorted(executor.stopping) == ["default/low-0", "default/low-1"]  # asked of their operator's API server
    for key in executor.stopping:
        plane.pod_stopped(key)
    plane.settle()
    assert executor.started[2:] == ["urgent-worker-0", "urgent-worker-1"]
    assert "default/podgroup:low" in plane.podgroups  # the group stays: it is its operator's


def test_a_pod_the_api_server_shows_failed_is_over_whatever_its_restart_policy_and_frees_its_node() -> None:
    # On Kubernetes the kubelet restarts a container in place without the phase showing it: Failed (an
    # eviction, a deadline) is final. Restarted in the plane instead, the pod kept its GPU for ever.
    plane, executor, _ = plane_with(nodes=1, gpus=1)
    pods = KubePods(cast(KubeClient, None), cast(ThreadPoolExecutor, None), "caldera", lambda key: None,
                    lambda job, reason, message: None, lambda: 0.0)  # fmt: skip
    put_group(plane, "deploy", 1)
    api = api_pod("evicted", "deploy", restartPolicy="Always", nodeName="n-0")
    pods.adopt(api)
    put_pod(plane, "evicted", "deploy", restartPolicy="Always", nodeName="n-0")
    put_group(plane, "next", 1)
    put_pod(plane, "newcomer", "next")
    plane.settle()
    assert executor.started == []
    pods.pod_event(plane, "MODIFIED", {**api, "status": {"phase": "Failed", "reason": "Evicted"}})
    plane.settle()
    assert plane.pods["default/evicted"].status.phase == o.POD_FAILED
    assert executor.started == ["newcomer"]


def test_a_pod_that_ends_after_its_group_was_deleted_gives_its_node_back() -> None:
    # A PyTorchJob's master succeeded and its operator deleted the PodGroup while a worker still ran: the
    # worker's end must reach the scheduler, whose group entry waits for it.
    plane, executor, _ = plane_with(nodes=1, gpus=1)
    key = put_group(plane, "torch", 1)
    put_pod(plane, "torch-worker", "torch", nodeName="n-0")
    put_group(plane, "next", 1)
    put_pod(plane, "newcomer", "next")
    plane.settle()
    plane.drop_group(key)
    plane.settle()
    assert executor.started == []
    plane.pod_exited("default/torch-worker", 0)  # Succeeded, and its pod object stays (cleanPodPolicy: None)
    plane.settle()
    assert executor.started == ["newcomer"]
    assert "default/podgroup:torch" not in plane.state.jobs
    plane.state.check_invariants()


def test_nothing_is_kept_under_a_group_once_it_and_its_pods_are_gone() -> None:
    plane, _, _ = plane_with(nodes=1, gpus=1)
    bare = put_group(plane, "bare", 1)
    put_pod(plane, "bare", "bare")
    plane.settle()
    plane.pod_stopped("default/bare")  # the pod first, then its own group: the usual order for a bare pod
    plane.drop_group(bare)
    never = put_group(plane, "never", 1)  # a group deleted before it had a pod
    plane.drop_group(never)
    plane.settle()
    assert bare not in plane.job_pods and never not in plane.job_pods
    assert bare not in plane._changes and never not in plane._changes
