from caldera.core import objects as o
from caldera.scheduler.scheduler import Scheduler
from caldera.scheduler.state import ClusterState
from caldera.testing.builders import make_node, make_pod, make_podgroup


def test_two_gangs_on_four_gpus_one_runs_whole() -> None:
    state = ClusterState()
    state.set_nodes(
        [make_node(f"n{i}", resources={"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"}) for i in range(2)]
    )
    for job in ("a", "b"):
        pg = make_podgroup(job, min_member=4, phase=o.PG_INQUEUE, created=0.0 if job == "a" else 1.0)
        state.set_podgroup(pg)
        for i in range(4):
            state.set_pod(make_pod(job, "worker", i), pg.key)
    result = Scheduler().run_cycle(state, now=0.0)
    bound = {b.pod for b in result.binds}
    assert bound == {f"default/a-worker-{i}" for i in range(4)}
    state.check_invariants()
    b = next(u for u in result.podgroups if u.job == "b")
    assert b.conditions[-1].type == "Unschedulable"
    assert b.conditions[-1].message.startswith("4/4 tasks in gang unschedulable: ")
    assert b.conditions[-1].message.endswith("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
