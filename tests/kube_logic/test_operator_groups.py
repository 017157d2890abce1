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
