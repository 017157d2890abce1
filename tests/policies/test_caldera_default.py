"""caldera-default's sla reservation never holds what its queue's share will not let it finish."""

from __future__ import annotations

from caldera.core import objects as o
from caldera.scheduler.config import parse_config
from caldera.scheduler.policies import policy_text
from caldera.scheduler.scheduler import Scheduler
from caldera.scheduler.state import ClusterState
from caldera.testing.builders import make_node, make_pod, make_podgroup


def test_a_gang_above_its_queue_share_does_not_hold_its_queue_hostage() -> None:
    """q1 and q2 deserve 2 of the 4 GPUs each, and q2 uses its two. big (4 GPUs, q1) is past its sla
    waiting time but can never fit q1's share while q2 runs: holding q1's two free GPUs for it every
    cycle would gain nothing and keep small (1 GPU, q1) out for as long as q2 runs."""
    state = ClusterState()
    state.set_nodes(
        [make_node(f"n{i}", resources={"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"}) for i in range(2)]
    )
    for q in ("q1", "q2"):
        state.set_queue(o.Queue(o.ObjectMeta(name=q, namespace="")))
    busy = make_podgroup("busy", queue="q2", min_member=2, phase=o.PG_RUNNING)
    state.set_podgroup(busy)
    for i in range(2):
        state.set_pod(make_pod("busy", "worker", i, node="n0", phase=o.POD_RUNNING), busy.key)
    for name, pods in (("big", 4), ("small", 1)):
        pg = make_podgroup(name, queue="q1", min_member=pods)
        state.set_podgroup(pg)
        for i in range(pods):
            state.set_pod(make_pod(name, "worker", i), pg.key)
    config = parse_config(policy_text("caldera-default").replace("sla-waiting-time: 1h", "sla-waiting-time: 1m"), "c")
    result = Scheduler(config).run_cycle(state, now=3600.0)
    assert [b.pod for b in result.binds] == ["default/small-worker-0"]
    big = next(u for u in result.podgroups if u.job == "big")
    assert big.conditions[-1].type == "Unschedulable"
    state.check_invariants()
