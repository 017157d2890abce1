"""Queue shares as people see them: deserved by the configured queue plugin, allocated, requested."""

from __future__ import annotations

from caldera.core import objects as o
from caldera.core.resources import parse_resource_list
from caldera.scheduler.config import config_from_dict
from caldera.scheduler.policies import load_policy
from caldera.scheduler.shares import queue_shares
from caldera.scheduler.state import ClusterState
from caldera.testing.builders import make_node, make_pod, make_podgroup

GPU = "nvidia.com/gpu"


def queue(name: str, weight: int = 1, deserved: dict[str, str] | None = None) -> o.Queue:
    spec = o.QueueSpec(weight=weight, deserved=parse_resource_list(deserved or {}))
    return o.Queue(o.ObjectMeta(name=name, namespace=""), spec)


def state_with_demand() -> ClusterState:
    """8 GPUs; queue a (weight 3) asks for 8 with 2 running, queue b (weight 1) asks for 8."""
    state = ClusterState()
    state.set_nodes([make_node("n0", resources={"cpu": "64", "memory": "256Gi", GPU: "8"})])
    state.set_queue(queue("a", weight=3, deserved={GPU: "2"}))
    state.set_queue(queue("b", weight=1, deserved={GPU: "6"}))
    for q in ("a", "b"):
        pg = make_podgroup(q, queue=q, min_member=1, phase=o.PG_INQUEUE)
        state.set_podgroup(pg)
        for i in range(8):
            running = q == "a" and i < 2
            pod = make_pod(q, "w", i, node="n0" if running else "", phase=o.POD_RUNNING if running else o.POD_PENDING)
            state.set_pod(pod, pg.key)
    return state


def test_proportion_splits_the_cluster_by_weight_among_queues_that_ask() -> None:
    shares = queue_shares(state_with_demand(), load_policy("volcano-default"))
    assert shares["a"].deserved[GPU] == 6000 and shares["b"].deserved[GPU] == 2000  # 8 GPUs 3:1, in milli-GPUs
    assert shares["a"].allocated == {GPU: 2000, "pods": 2} and shares["b"].allocated == {}
    assert shares["a"].requested[GPU] == 8000 and shares["b"].requested[GPU] == 8000
    assert shares["default"].deserved == {} and shares["default"].requested == {}


def test_a_queue_deserves_what_it_asks_when_everything_fits() -> None:
    state = state_with_demand()
    state.set_nodes([make_node(f"n{i}", resources={"cpu": "64", "memory": "256Gi", GPU: "8"}) for i in range(2)])
    shares = queue_shares(state, load_policy("volcano-default"))
    assert shares["a"].deserved[GPU] == 8000 and shares["b"].deserved[GPU] == 8000


def test_with_the_capacity_plugin_a_queue_deserves_its_spec() -> None:
    config = config_from_dict(
        {"actions": "enqueue, allocate", "tiers": [{"plugins": [{"name": "gang"}, {"name": "capacity"}]}]}
    )
    shares = queue_shares(state_with_demand(), config)
    assert shares["a"].deserved[GPU] == 2000 and shares["b"].deserved[GPU] == 6000
