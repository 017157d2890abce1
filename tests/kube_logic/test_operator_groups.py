"""What the status writer does with other operators' PodGroups (no API server: a client that notes requests)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from caldera.backends.kube.foreign import podgroup_from_api
from caldera.scheduler.scheduler import Scheduler
from caldera.system.control import ControlPlane
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
