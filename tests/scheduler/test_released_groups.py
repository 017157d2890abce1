"""A PodGroup deleted while pods of it still stop is released: its pods keep their node's resources until they are
gone, but the group holds no place in its queue: it is not admitted again, and its last phase is no room."""

from __future__ import annotations

from caldera.core import objects as o
from caldera.core.resources import parse_resource_list
from caldera.scheduler.config import parse_config
from caldera.scheduler.scheduler import Scheduler
from caldera.scheduler.state import ClusterState
from caldera.testing.builders import make_node, make_pod, make_podgroup

# enqueue asks the proportion plugin, which counts what lower-priority Inqueue jobs of the queue hold as room
CONFIG = parse_config(
    """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: proportion}]
""",
    "test",
)
GPU = {"nvidia.com/gpu": "1"}


def gang(state: ClusterState, name: str, priority: str, phase: str, gpus: int, *pods: o.Pod) -> None:
    """A gang of one-GPU pods in queue q, asking `gpus` GPUs as its minimum."""
    state.set_podgroup(
        make_podgroup(
            name,
            min_member=len(pods),
            queue="q",
            priority_class=priority,
            phase=phase,
            min_resources={"nvidia.com/gpu": str(gpus)},
        )
    )
    for pod in pods:
        state.set_pod(pod, f"default/{name}")


def running(name: str, index: int) -> o.Pod:
    return make_pod(name, "worker", index, requests=GPU, node="n0", phase=o.POD_RUNNING)


def test_a_released_group_that_was_inqueue_is_no_room_for_another_job() -> None:
    state = ClusterState()
    state.set_nodes([make_node("n0", resources={"cpu": "32", "memory": "64Gi", "nvidia.com/gpu": "8"})])
    state.set_priority_classes([o.PriorityClass("low", 0), o.PriorityClass("high", 100)])
    capped = o.QueueSpec(capability=parse_resource_list({"nvidia.com/gpu": "4"}))
    state.set_queue(o.Queue(o.ObjectMeta(name="q", namespace=""), capped))
    # a: a low-priority gang back Inqueue after one pod failed (the other runs), asking 4 GPUs; d: 3 GPUs running
    failed = make_pod("a", "worker", 1, requests=GPU, phase=o.POD_FAILED)
    gang(state, "a", "low", o.PG_INQUEUE, 4, running("a", 0), failed)
    gang(state, "d", "high", o.PG_RUNNING, 3, *(running("d", i) for i in range(3)))
    Scheduler(CONFIG).run_cycle(state, 0.0)
    stopping = running("a", 0)
    stopping.deletion_timestamp = 1.0
    state.set_pod(stopping, "default/a")
    state.release_podgroup("default/a")  # a was deleted; its pod still stops
    gang(state, "b", "high", o.PG_PENDING, 2, *(make_pod("b", "worker", i, requests=GPU) for i in range(2)))

    result = Scheduler(CONFIG).run_cycle(state, 2.0)

    # d's 3 GPUs and b's 2 would pass the queue's 4: b waits, as it would had a's group gone at once
    assert [(u.key, u.phase) for u in result.podgroups] == [("default/b", o.PG_PENDING)]
    assert "default/a" not in state.pending_groups and state.jobs["default/a"].tasks  # its stopping pod still counts
    state.check_invariants()
