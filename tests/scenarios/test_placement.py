"""Job order (DRF) and node choice: binpack, least-allocated, predicates, task-topology."""

from __future__ import annotations

from typing import Any

import pytest

from caldera.testing.scenario import (
    arrival,
    binds,
    cluster,
    events,
    gpu_nodes,
    job_phase,
    nodes_of,
    run_scenario,
    scheduler_config,
    task,
    unschedulable_messages,
    vcjob,
    workload,
)

from .configs import FIRST_TIER, VOLCANO_SHAPE, placement_only

# ---------------------------------------------------------------- DRF

WITHOUT_DRF = scheduler_config(actions="enqueue, allocate, backfill", tiers=[FIRST_TIER, ["predicates", "proportion"]])


@pytest.mark.parametrize(("config", "winner"), [(VOLCANO_SHAPE, "b"), (WITHOUT_DRF, "a")], ids=["drf", "without-drf"])
def test_drf_gives_a_freed_gpu_to_the_job_with_the_lower_dominant_share(config: Any, winner: str) -> None:
    """a (older) holds two GPUs and b one, both running and both wanting more: the GPU freed at 30 goes to b.

    Without drf, the older job wins: that is what shows drf decides."""
    report = run_scenario(
        cluster=cluster(nodes=[gpu_nodes(count=2, gpus=2)]),
        workload=workload(
            arrival(vcjob("f1", tasks=[task(replicas=2)]), duration=10),
            arrival(vcjob("f2"), duration=20),
            arrival(vcjob("f3"), duration=30),
            arrival(vcjob("a", tasks=[task(replicas=3)], min_available=1), at=1, duration=1000),
            arrival(vcjob("b", tasks=[task(replicas=3)], min_available=1), at=2, duration=1000),
        ),
        config=config,
        until=100,
    )
    assert len(binds(report, "a", at=10.0)) == 2
    assert len(binds(report, "b", at=20.0)) == 1  # b is not yet running: gang orders it first anyway
    [at_30] = [e for e in events(report, "Bind") if e["time"] == 30.0]
    assert at_30["object"].startswith(f"{winner}-")


# ---------------------------------------------------------------- node order

THREE_NODES = cluster(nodes=[gpu_nodes(count=3, gpus=4)])
SMALL_JOBS = workload(*(arrival(vcjob(f"small-{i}")) for i in range(3)))
LEAST_ALLOCATED = {"name": "nodeorder", "arguments": {"leastrequested.weight": 1, "balancedresource.weight": 0}}


def test_binpack_puts_small_pods_on_one_node() -> None:
    report = run_scenario(cluster=THREE_NODES, workload=SMALL_JOBS, config=placement_only("binpack"))
    assert [e["node"] for e in events(report, "Bind")] == ["gpu-0"] * 3


def test_least_allocated_spreads_small_pods() -> None:
    report = run_scenario(cluster=THREE_NODES, workload=SMALL_JOBS, config=placement_only(LEAST_ALLOCATED))
    assert sorted(e["node"] for e in events(report, "Bind")) == ["gpu-0", "gpu-1", "gpu-2"]


# ---------------------------------------------------------------- predicates

LABELLED = cluster(
    nodes=[
        gpu_nodes(name="a100", count=2, gpus=2, labels={"accelerator": "a100"}),
        gpu_nodes(name="h100", count=1, gpus=2, labels={"accelerator": "h100"}),
        gpu_nodes(
            name="infer", count=1, gpus=2, taints=[{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}]
        ),
    ]
)
H100_ONLY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "accelerator", "operator": "In", "values": ["h100"]}]}]
        }
    }
}
TOLERATES_INFER = [{"key": "dedicated", "operator": "Equal", "value": "infer", "effect": "NoSchedule"}]
ON_INFER = {"kubernetes.io/hostname": "infer"}


@pytest.mark.parametrize(
    ("worker", "nodes"),
    [
        pytest.param(task(replicas=4, node_selector={"accelerator": "a100"}), {"a100-0", "a100-1"}, id="nodeSelector"),
        pytest.param(task(replicas=2, affinity=H100_ONLY), {"h100"}, id="required-node-affinity"),
        pytest.param(task(replicas=2, tolerations=TOLERATES_INFER, node_selector=ON_INFER), {"infer"}, id="toleration"),
        pytest.param(task(replicas=6), {"a100-0", "a100-1", "h100"}, id="taint-keeps-others-off"),
    ],
)
def test_pods_land_only_where_predicates_allow(worker: dict[str, Any], nodes: set[str]) -> None:
    report = run_scenario(cluster=LABELLED, workload=workload(arrival(vcjob("j", tasks=[worker]))))
    assert job_phase(report, "j") == "Completed"
    assert set(nodes_of(report, "j").values()) == nodes


@pytest.mark.parametrize(
    ("worker", "why"),
    [
        pytest.param(
            task(node_selector=ON_INFER),
            "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: infer}, "
            "3 node(s) didn't match Pod's node affinity/selector.",
            id="untolerated-taint",
        ),
        pytest.param(
            task(node_selector={"accelerator": "tpu"}),
            "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: infer}, "
            "3 node(s) didn't match Pod's node affinity/selector.",
            id="no-matching-label",
        ),
        pytest.param(
            task(replicas=3, affinity=H100_ONLY),
            "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint "
            "{dedicated: infer}, 2 node(s) didn't match Pod's node affinity/selector.",
            id="too-big-for-the-allowed-node",
        ),
    ],
)
def test_pods_nowhere_allowed_wait_and_say_why(worker: dict[str, Any], why: str) -> None:
    """Each node is counted once, under the first filter that rejects it, as kube-scheduler words it."""
    report = run_scenario(cluster=LABELLED, workload=workload(arrival(vcjob("j", tasks=[worker]))))
    assert binds(report, "j") == []
    [message] = unschedulable_messages(report, "j")
    assert message.split(" tasks in gang unschedulable: ")[1] == why


# ---------------------------------------------------------------- task-topology


def test_task_topology_affinity_puts_ps_and_workers_together() -> None:
    """Least-allocated scoring alone spreads the three pods; the affinity annotation keeps them on one node."""
    job = vcjob(
        "ctr",
        tasks=[task("ps", gpus=0), task("worker", replicas=2)],
        annotations={"volcano.sh/task-topology-affinity": "ps,worker"},
    )
    spread = run_scenario(cluster=THREE_NODES, workload=workload(arrival(job)), config=placement_only(LEAST_ALLOCATED))
    together = run_scenario(
        cluster=THREE_NODES, workload=workload(arrival(job)), config=placement_only(LEAST_ALLOCATED, "task-topology")
    )
    assert len(set(nodes_of(spread, "ctr").values())) == 3
    assert len(set(nodes_of(together, "ctr").values())) == 1


def test_task_topology_anti_affinity_spreads_workers_despite_binpack() -> None:
    job = vcjob("ring", tasks=[task(replicas=3)], annotations={"volcano.sh/task-topology-anti-affinity": "worker"})
    packed = run_scenario(cluster=THREE_NODES, workload=workload(arrival(job)), config=placement_only("binpack"))
    spread = run_scenario(
        cluster=THREE_NODES, workload=workload(arrival(job)), config=placement_only("binpack", "task-topology")
    )
    assert len(set(nodes_of(packed, "ring").values())) == 1
    assert len(set(nodes_of(spread, "ring").values())) == 3
