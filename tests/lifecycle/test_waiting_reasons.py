"""Why a job waits: "never fits" told apart from "not now", per node class and for its queue.

The control plane (controller and scheduler) with an executor the test drives, a manual clock,
and what `list`/`get` show (`waiting`) and `explain` prints (`explanation_json`).
"""

from __future__ import annotations

from typing import Any

from caldera.core import objects as o
from caldera.core.jobmanifest import parse_job
from caldera.core.manifest import parse_queue
from caldera.scheduler.scheduler import Scheduler
from caldera.system.backoff import RestartBackoff
from caldera.system.control import ControlPlane
from caldera.system.waiting import explanation_json, waiting
from caldera.testing.builders import make_node
from caldera.utils.clock import ManualClock

from .simkit import manifest, task
from .test_control_plane import HandExecutor

GPU_NODE = {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2", "pods": "110"}


def plane_with(*nodes: o.Node, backoff: RestartBackoff | None = None) -> tuple[ControlPlane, HandExecutor]:
    executor = HandExecutor()
    plane = ControlPlane(Scheduler(), executor, ManualClock(), backoff)
    plane.add_nodes(list(nodes) or [make_node(f"gpu-{i}", resources=GPU_NODE) for i in range(3)])
    return plane, executor


def submit(plane: ControlPlane, name: str, tasks: list[dict[str, Any]], **spec: Any) -> o.Job:
    job = parse_job(manifest(name, tasks=tasks, **spec), "test")
    plane.submit(job)
    plane.settle()
    return job


def why(plane: ControlPlane, name: str) -> dict[str, Any] | None:
    return waiting(plane, plane.jobs[f"default/{name}"])


def explained(plane: ControlPlane, name: str) -> dict[str, Any]:
    return explanation_json(plane, plane.jobs[f"default/{name}"])


def with_selector(t: dict[str, Any], **labels: str) -> dict[str, Any]:
    t["template"]["spec"]["nodeSelector"] = labels
    return t


def test_an_unsatisfiable_node_selector_never_fits() -> None:
    plane, _ = plane_with()
    submit(plane, "sel", [with_selector(task(replicas=2), disk="ssd")])
    assert why(plane, "sel") == {
        "reason": "NeverFits",
        "message": "task worker fits no node: 3 node(s): labels do not match disk=ssd",
        "never": True,
    }
    (cls,) = explained(plane, "sel")["nodeClasses"]
    assert cls["nodes"] == ["gpu-0", "gpu-1", "gpu-2"]
    assert cls["tasks"] == [
        {"task": "worker", "need": 2, "perNode": 0, "fitsNow": 0, "blocks": "labels do not match disk=ssd"}
    ]


def test_a_queue_whose_capability_can_never_hold_the_job() -> None:
    plane, _ = plane_with()
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "small"}}
    plane.add_queue(parse_queue({**queue, "spec": {"capability": {"nvidia.com/gpu": "2"}}}, "test"))
    submit(plane, "big", [task(replicas=4)], queue="small")
    w = why(plane, "big")
    assert w is not None and w["never"] and w["reason"] == "NeverFits"
    assert (
        w["message"] == "queue small's capability (nvidia.com/gpu 2) is less than the job's minimum (nvidia.com/gpu 4)"
    )
    q = explained(plane, "big")["queue"]
    assert (q["capability"], q["minimum"]["nvidia.com/gpu"]) == ({"nvidia.com/gpu": "2"}, "4")


def test_a_pod_larger_than_any_node_and_a_gang_larger_than_the_cluster_never_fit() -> None:
    plane, _ = plane_with()
    submit(plane, "fat", [task(replicas=1, gpus=3)])
    submit(plane, "wide", [task(replicas=7, gpus=1)])
    fat, wide = why(plane, "fat"), why(plane, "wide")
    assert fat is not None and fat["never"]
    assert fat["message"].startswith(
        "task worker fits no node: 3 node(s): asks for nvidia.com/gpu 3, a node has nvidia.com/gpu 2"
    )
    assert wide is not None and wide["never"]
    assert wide["message"].startswith("task worker needs 7 pods; empty, the nodes would hold 6 of them")


def test_an_untolerated_taint_never_fits() -> None:
    tainted = [make_node(f"t-{i}", resources=GPU_NODE, taints=(o.Taint("dedicated", "infra"),)) for i in range(2)]
    plane, _ = plane_with(*tainted)
    submit(plane, "job", [task(replicas=1)])
    w = why(plane, "job")
    assert (
        w is not None
        and w["message"] == "task worker fits no node: 2 node(s): untolerated taint dedicated=infra:NoSchedule"
    )


def test_capacity_in_use_is_not_now_and_the_job_starts_when_it_frees() -> None:
    plane, executor = plane_with()
    submit(plane, "first", [task(replicas=6)])
    submit(plane, "second", [task(replicas=4)])
    w = why(plane, "second")
    assert w is not None and (w["reason"], w["never"]) == ("Unschedulable", False)
    assert "task worker: 0 of the 4 pods it needs fit now (3 node(s): nvidia.com/gpu in use)" in w["message"]
    (cls,) = explained(plane, "second")["nodeClasses"]
    assert cls["tasks"][0] | {} == {
        "task": "worker",
        "need": 4,
        "perNode": 2,
        "fitsNow": 0,
        "blocks": "nvidia.com/gpu in use",
    }
    assert why(plane, "first") is None  # running: nothing holds it up
    for i in range(6):
        plane.pod_exited(f"default/first-worker-{i}", 0)
    plane.settle()
    assert executor.started[6:] == [f"second-worker-{i}" for i in range(4)]
    assert why(plane, "second") is None


def test_node_classes_split_by_what_the_job_asks() -> None:
    ssd = [make_node(f"ssd-{i}", resources=GPU_NODE, labels={"disk": "ssd", "host": f"ssd-{i}"}) for i in range(2)]
    hdd = [make_node("hdd-0", resources=GPU_NODE, labels={"disk": "hdd"})]
    plane, _ = plane_with(*ssd, *hdd)
    submit(plane, "big", [with_selector(task(replicas=5), disk="ssd")])
    w = why(plane, "big")
    assert w is not None and w["message"] == "task worker needs 5 pods; empty, the nodes would hold 4 of them"
    classes = {tuple(c["nodes"]): c for c in explained(plane, "big")["nodeClasses"]}
    assert set(classes) == {("ssd-0", "ssd-1"), ("hdd-0",)}
    assert classes[("ssd-0", "ssd-1")]["labels"] == {"disk": "ssd"}  # what its nodes share
    assert classes[("ssd-0", "ssd-1")]["tasks"][0]["perNode"] == 2
    assert classes[("hdd-0",)]["tasks"][0]["blocks"] == "labels do not match disk=ssd"


def test_a_crash_loop_is_why_a_running_job_is_held_up() -> None:
    plane, _ = plane_with(backoff=RestartBackoff())
    submit(plane, "loop", [task(replicas=1, restart_policy="OnFailure")])
    plane.pod_exited("default/loop-worker-0", 1)
    plane.pod_exited("default/loop-worker-0", 1)
    plane.settle()
    assert why(plane, "loop") == {
        "reason": "CrashLoopBackOff",
        "message": "pod loop-worker-0: back-off 10s restarting failed container (exit code 1)",
        "never": False,
    }


def test_an_elastic_gang_needs_only_its_minimum() -> None:
    """minAvailable 2 of 8: per-task minimums do not bind; the job never fits only if 2 pods cannot."""
    plane, _ = plane_with()
    submit(plane, "el", [task(replicas=8)], minAvailable=2)  # 8 GPUs asked, 6 here: 2 is enough
    assert why(plane, "el") is None
    assert (explained(plane, "el")["never"], explained(plane, "el")["now"]) == ([], [])  # running: nothing in its way
    submit(plane, "nowhere", [with_selector(task(replicas=4), disk="ssd")], minAvailable=2)
    w = why(plane, "nowhere")
    assert w is not None and w["message"] == (
        "the job needs 2 pods; empty, the nodes would hold 0 of them; "
        "task worker fits no node: 3 node(s): labels do not match disk=ssd"
    )
