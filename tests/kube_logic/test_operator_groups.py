"""What the status writer does with other operators' PodGroups (no API server: a client that notes requests)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

from caldera.backends.kube.foreign import podgroup_from_api
from caldera.scheduler.scheduler import Scheduler
from caldera.system.control import ControlPlane
from caldera.system.kubegroups import OperatorGroups
from caldera.system.kubestatus import StatusWriter
from caldera.testing.builders import make_node
from caldera.utils.clock import ManualClock

from .test_admission_batches import Starts


class Noting:
    """A Kubernetes client that answers every write and notes it ("VERB path")."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(f"POST {path}")
        return {**body, "metadata": {**body["metadata"], "uid": "made"}}

    def patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(f"PATCH {path}")
        return body

    def delete(self, path: str, **_: Any) -> dict[str, Any]:
        self.sent.append(f"DELETE {path}")
        return {}


def test_an_operators_podgroup_that_went_is_never_deleted_by_caldera() -> None:
    """Deleting it again could delete the one its operator has just made under the same name."""
    clock = ManualClock()
    plane = ControlPlane(Scheduler(), Starts(), clock)
    plane.add_nodes([make_node("n-0", resources={"cpu": "8"})])
    kube = Noting()
    with ThreadPoolExecutor(2) as pool, ThreadPoolExecutor(2) as status_pool:
        status = StatusWriter(kube, pool, status_pool, clock.now)  # type: ignore[arg-type]
        body = {"metadata": {"name": "trainer", "namespace": "ml", "uid": "u-1"}, "spec": {"minMember": 1}}
        pg = podgroup_from_api(body)
        plane.put_group(f"ml/{pg.job}", pg)
        status.adopt_podgroup(body)
        status.not_ours.add("ml/trainer")
        plane.settle()
        status.touched(plane.take_touched())
        status.flush_podgroups(plane)
        status.podgroups_created()
        plane.drop_group(f"ml/{pg.job}")
        status.touched(plane.take_touched())
        status.flush_podgroups(plane)
        status.podgroups_created()
    assert not [r for r in kube.sent if r.startswith(("DELETE", "POST"))], kube.sent


def test_a_pod_or_podgroup_caldera_cannot_read_is_refused_once_with_a_warning_event_naming_the_field() -> None:
    clock = ManualClock()
    plane = ControlPlane(Scheduler(), Starts(), clock)
    with ThreadPoolExecutor(1) as pool:
        status = StatusWriter(Noting(), pool, pool, clock.now)  # type: ignore[arg-type]
        pods = SimpleNamespace(api={})
        groups = OperatorGroups(plane, pods, status, "caldera", lambda change, obj: None)  # type: ignore[arg-type]
        bad_pod = {
            "metadata": {"name": "p", "namespace": "ml", "uid": "u-p"},
            "spec": {"schedulerName": "caldera", "containers": [
                {"name": "c", "image": "i", "resources": {"requests": {"cpu": "lots"}}}]},
        }  # fmt: skip
        groups.on_pod("ADDED", bad_pod)
        groups.on_pod("MODIFIED", bad_pod)
        bad_group = {"metadata": {"name": "g", "namespace": "ml", "uid": "u-g"}, "spec": {"minMember": -1}}
        groups.on_podgroups("ADDED", bad_group)
    told = [(e.kind, e.object, e.message) for e in plane.events if e.reason == "Refused"]
    assert told == [
        ("Refused", "p", "not scheduled: pod ml/p: spec.containers[0].resources.requests.cpu: 'lots' is not a quantity "
         "(expected a number with an optional suffix like 500m, 4Gi)"),
        ("RefusedGroup", "podgroup:g", "not scheduled: podgroup ml/g: spec.minMember: must be an integer >= 0"),
    ]  # fmt: skip
    assert plane.podgroups == {} and plane.pods == {}  # no group made for the refused pod


class Held:
    """The watch's `hold`: which pods hold their node outside the plane now."""

    def __init__(self) -> None:
        self.pods: set[str] = set()

    def __call__(self, change: str, obj: dict[str, Any]) -> None:
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        phase = (obj.get("status") or {}).get("phase")
        if change != "DELETED" and (obj.get("spec") or {}).get("nodeName") and phase not in ("Succeeded", "Failed"):
            self.pods.add(key)
        else:
            self.pods.discard(key)


def operator_pod(name: str, *, node: str = "", cpu: str = "1", **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "caldera", "containers": [
        {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}  # fmt: skip
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "ml", "uid": f"u-{name}", **meta}, "spec": spec,
            "status": {"phase": "Running" if node else "Pending"}}  # fmt: skip


def operator_groups(kube: Any) -> tuple[ControlPlane, OperatorGroups, StatusWriter, Held, ThreadPoolExecutor]:
    clock = ManualClock()
    plane = ControlPlane(Scheduler(), Starts(), clock)
    plane.add_nodes([make_node("n-0", resources={"cpu": "8"})])
    pool = ThreadPoolExecutor(1)
    status = StatusWriter(kube, pool, pool, clock.now)
    held = Held()
    pods = SimpleNamespace(api={}, adopt=lambda obj: None)
    return plane, OperatorGroups(plane, pods, status, "caldera", held), status, held, pool  # type: ignore[arg-type]


def test_the_pods_of_one_replicaset_share_the_group_made_for_them_named_as_volcano_names_it() -> None:
    plane, groups, status, _, pool = operator_groups(Noting())
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7f9", "uid": "rs-1", "controller": True}
    with pool:
        for name in ("web-a", "web-b"):
            groups.on_pod("ADDED", operator_pod(name, ownerReferences=[rs]))
    assert list(plane.podgroups) == ["ml/podgroup:podgroup-rs-1"]  # one, not one per pod left behind by each
    assert sorted(plane.job_pods["ml/podgroup:podgroup-rs-1"]) == ["web-a", "web-b"]
    assert status.group_owners["ml/podgroup-rs-1"] == [rs]


class Refusing(Noting):
    """A client whose PodGroup creations are refused (a quota, a webhook)."""

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(f"POST {path}")
        raise RuntimeError("forbidden: exceeded quota")


def test_a_group_that_could_not_be_written_goes_with_its_last_pod_and_is_not_tried_again() -> None:
    kube = Refusing()
    plane, groups, status, _, pool = operator_groups(kube)
    with pool:
        bare = operator_pod("bare")
        groups.on_pod("ADDED", bare)
        plane.settle()
        status.touched(plane.take_touched())
        status.flush_podgroups(plane)
        status.podgroups_created()
        assert kube.sent == ["POST /apis/scheduling.volcano.sh/v1beta1/namespaces/ml/podgroups"]
        plane.pod_stopped("ml/bare")  # KubePods.pod_event: the pod is gone from the API server
        groups.on_pod("DELETED", bare)
        assert plane.podgroups == {} and status.group_owners == {} and groups.groups == {}
        assert "ml/podgroup:podgroup-u-bare" not in plane.job_pods


def test_a_waiting_pod_deleted_before_its_group_came_is_not_scheduled_when_it_comes() -> None:
    plane, groups, _, held, pool = operator_groups(Noting())
    named = {"annotations": {"scheduling.k8s.io/group-name": "late"}}
    with pool:
        pod = operator_pod("leaving", **named)
        groups.on_pod("ADDED", pod)
        groups.on_pod("MODIFIED", {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": "2026-12-07T07:00:00Z"}})
        groups.on_podgroups("ADDED", {"metadata": {"name": "late", "namespace": "ml", "uid": "g-1"},
                                      "spec": {"minMember": 1}})  # fmt: skip
    assert "ml/leaving" not in plane.pods  # a stale copy would be bound, and its binding refused every turn
    assert held.pods == set()


def test_a_bound_pod_caldera_cannot_read_still_holds_its_node_until_it_is_deleted() -> None:
    plane, groups, _, held, pool = operator_groups(Noting())
    with pool:
        bad = operator_pod("odd", node="n-0", cpu="lots")
        groups.on_pod("ADDED", bad)
        assert held.pods == {"ml/odd"}  # else its node would be counted free and overcommitted
        waiting = operator_pod("odd-too", node="n-0", cpu="lots", annotations={"scheduling.k8s.io/group-name": "g"})
        groups.on_pod("ADDED", waiting)  # waits for its group, holding its node
        groups.on_podgroups("ADDED", {"metadata": {"name": "g", "namespace": "ml", "uid": "g-1"},
                                      "spec": {"minMember": 1}})  # fmt: skip
        assert held.pods == {"ml/odd", "ml/odd-too"}  # refused when its group came: it holds it still
        groups.on_pod("DELETED", bad)
        groups.on_pod("DELETED", waiting)
    assert held.pods == set() and plane.pods == {}
