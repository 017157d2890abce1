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


def test_a_released_group_that_was_inqueue_is_no_room_for_another_job() -> None:
    state = ClusterState()
    state.set_nodes([make_node("n0", resources={"cpu": "32", "memory": "64Gi", "nvidia.com/gpu": "8"})])
    state.set_priority_classes([o.PriorityClass("low", 0), o.PriorityClass("high", 100)])
    capped = o.QueueSpec(capability=parse_resource_list({"nvidia.com/gpu": "4"}))
    state.set_queue(o.Queue(o.ObjectMeta(name="q", namespace=""), capped))
    # a: a low-priority gang back Inqueue after one pod failed (the other runs), asking 4 GPUs; d: 3 GPUs running
    state.set_podgroup(
        make_podgroup("a", min_member=2, queue="q", priority_class="low", min_resources={"nvidia.com/gpu": "4"})
    )
    state.set_pod(make_pod("a", "worker", 0, requests=GPU, node="n0", phase=o.POD_RUNNING), "default/a")
    state.set_pod(make_pod("a", "worker", 1, requests=GPU, phase=o.POD_FAILED), "default/a")
    state.set_podgroup(
        make_podgroup(
            "d",
            min_member=3,
            queue="q",
            priority_class="high",
            phase=o.PG_RUNNING,
            min_resources={"nvidia.com/gpu": "3"},
        )
    )
    for i in range(3):
        state.set_pod(make_pod("d", "worker", i, requests=GPU, node="n0", phase=o.POD_RUNNING), "default/d")
    Scheduler(CONFIG).run_cycle(state, 0.0)
    stopping = make_pod("a", "worker", 0, requests=GPU, node="n0", phase=o.POD_RUNNING)
    stopping.deletion_timestamp = 1.0
    state.set_pod(stopping, "default/a")
    state.release_podgroup("default/a")  # a was deleted; its pod still stops
    state.set_podgroup(
        make_podgroup(
            "b",
            min_member=2,
            queue="q",
            priority_class="high",
            phase=o.PG_PENDING,
            min_resources={"nvidia.com/gpu": "2"},
        )
    )
    for i in range(2):
        state.set_pod(make_pod("b", "worker", i, requests=GPU), "default/b")

    result = Scheduler(CONFIG).run_cycle(state, 2.0)

    # d's 3 GPUs and b's 2 would pass the queue's 4: b waits, as it would had a's group gone at once
    assert [(u.key, u.phase) for u in result.podgroups] == [("default/b", o.PG_PENDING)]
    assert "default/a" not in state.pending_groups and state.jobs["default/a"].tasks  # its stopping pod still counts
    state.check_invariants()
