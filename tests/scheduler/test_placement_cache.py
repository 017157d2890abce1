"""The node values kept per request shape (placement.py) give the node the long way gives, after any change.

The long way is `best_node(task, feasible(task, free(future)))` over every node. Each
step below changes the cluster as a cycle does (allocate, pipeline, evict, discard,
commit, a pod gone, a node cordoned), then asks both for several request shapes,
with and without releasing resources, on heterogeneous nodes with labels and taints.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from caldera.core import objects as o
from caldera.scheduler import placement
from caldera.scheduler.config import SchedulerConfig
from caldera.scheduler.framework import Indices, Scores
from caldera.scheduler.placement import Placements
from caldera.scheduler.plugins.registry import registry
from caldera.scheduler.policies import load_policy
from caldera.scheduler.session import Session, hook_layout
from caldera.scheduler.state import ClusterState, TaskInfo, TaskStatus
from caldera.scheduler.statement import Statement
from caldera.testing.builders import make_node, make_pod, make_podgroup

SHAPES = [
    {"nvidia.com/gpu": "1"},
    {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"},
    {"cpu": "16", "memory": "8Gi"},
    {"cpu": "500m", "memory": "1Gi"},
    {"nvidia.com/gpu": "8", "cpu": "8"},
]


def volcano() -> SchedulerConfig:
    """Volcano's configuration: its node-order plugins (nodeorder, binpack) score each node alone, so the
    kept values are the whole score."""
    return load_policy("volcano-default")


def with_order(base: SchedulerConfig, names: list[str]) -> SchedulerConfig:
    """`base` with its node-order plugins replaced by `names`, in that order, as a tier of their own."""
    option = type(base.tiers[0][0])
    scoring = {"nodeorder", "binpack", "consolidate", "task-topology"}
    tiers = tuple(tuple(p for p in tier if p.name not in scoring) for tier in base.tiers)
    return type(base)(base.actions, (*tiers, tuple(option(name) for name in names)), base.action_arguments)


CONFIGS = {
    "volcano-default": volcano,
    # consolidate looks at where the task's job already is: asked at each query, added to the kept sum
    "caldera-default": lambda: load_policy("caldera-default"),
    # a local plugin after a non-local one is asked at each query too, so the sum keeps its order
    "consolidate-between": lambda: with_order(volcano(), ["nodeorder", "consolidate", "binpack"]),
}


def cluster(rng: random.Random, nodes: int) -> ClusterState:
    state = ClusterState()
    made = []
    for i in range(nodes):
        gpus, cpu = rng.choice([(8, 64), (4, 32), (0, 16), (8, 96)])
        taints = (o.Taint("dedicated", "infer", "NoSchedule"),) if i % 7 == 3 else ()
        made.append(
            make_node(
                f"n{i:03d}",
                resources={"cpu": str(cpu), "memory": f"{cpu * 8}Gi", "nvidia.com/gpu": str(gpus)},
                labels={"zone": "a" if i % 2 else "b"},
                taints=taints,
            )
        )
    state.set_nodes(made)
    return state


def probes(state: ClusterState) -> list[TaskInfo]:
    """One pending task per request shape, half of them asking for zone a."""
    out = []
    for i, req in enumerate(SHAPES):
        pg = make_podgroup(f"probe{i}", min_member=1)
        state.set_podgroup(pg)
        selector = {"zone": "a"} if i % 2 else None
        task = state.set_pod(make_pod(f"probe{i}", "w", 0, requests=req, node_selector=selector), pg.key)
        assert task is not None
        out.append(task)
    return out


def check(ssn: Session, placements: Placements, tasks: list[TaskInfo], gangs: Sequence[TaskInfo] = ()) -> None:
    """Both ways agree for every probe, and for the pending tasks of `gangs` (tasks of jobs with several,
    whose consolidate scores depend on where their job's other pods are)."""
    for task in [*tasks, *(t for t in gangs if t.status is TaskStatus.PENDING)]:
        for future in (False, True):
            expected = ssn.best_node(task, ssn.feasible(task, ssn.free(future)))
            assert placements.best(ssn, task, future) == expected, (task.key, future)


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("seed", range(6), ids=lambda s: f"seed{s}")
def test_kept_values_give_the_node_the_long_way_gives(seed: int, name: str) -> None:
    rng = random.Random(seed)
    state = cluster(rng, nodes=40)
    config = CONFIGS[name]()
    layout = hook_layout(config, registry())
    placements = Placements(layout)
    tasks = probes(state)
    for j in range(30):
        pg = make_podgroup(f"job{j}", min_member=1)
        state.set_podgroup(pg)
        for i in range(rng.randint(1, 6)):
            state.set_pod(make_pod(f"job{j}", "w", i, requests=rng.choice(SHAPES)), pg.key)
    workers = [t for t in state.tasks.values() if t.job.name.startswith("job")]
    for step in range(120):
        ssn = Session(state, config, float(step), registry(), layout)
        stmt = Statement(ssn)
        for task in rng.sample(workers, 5):
            if task.status is TaskStatus.PENDING:
                node = ssn.best_node(task, ssn.feasible(task, ssn.free(rng.random() < 0.3)))
                if node >= 0:
                    (stmt.allocate if rng.random() < 0.7 else stmt.pipeline)(task, node)
            elif task.status in (TaskStatus.BINDING, TaskStatus.RUNNING) and rng.random() < 0.5:
                stmt.evict(task, "Preempt", "")
            check(ssn, placements, tasks, rng.sample(workers, 4))
        if rng.random() < 0.4:
            stmt.discard()
        else:
            stmt.commit()
        check(ssn, placements, tasks)
        gone = [t for t in workers if t.status is TaskStatus.RELEASING]
        if gone and rng.random() < 0.5:  # an evicted pod's process ended: it leaves its node
            state.remove_task(gone[0].key)
            workers.remove(gone[0])
        if step % 25 == 24:  # a node cordoned: its column is recomputed with every other
            node = make_node(state.node_names[rng.randrange(40)], unschedulable=True)
            state.set_node(node)
        ssn.close()
        ssn.release()
        check(Session(state, config, float(step), registry(), layout), placements, tasks)


def test_more_changes_than_the_log_keeps_recompute_every_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("caldera.scheduler.nodes.CHANGE_LOG", 4)
    rng = random.Random(7)
    state = cluster(rng, nodes=30)
    layout = hook_layout(volcano(), registry())
    placements = Placements(layout)
    tasks = probes(state)
    pg = make_podgroup("big", min_member=1)
    state.set_podgroup(pg)
    pods = [state.set_pod(make_pod("big", "w", i, requests={"cpu": "2"}), pg.key) for i in range(20)]
    for i, task in enumerate(pods):
        assert task is not None
        ssn = Session(state, volcano(), 0.0, registry(), layout)
        if i % 3 == 0:
            check(ssn, placements, tasks)
        Statement(ssn).allocate(task, i % 30)
    check(Session(state, volcano(), 0.0, registry(), layout), placements, tasks)


@pytest.mark.parametrize(
    ("names", "kept"),
    [
        (["nodeorder", "binpack"], 2),
        (["nodeorder", "binpack", "consolidate"], 2),
        (["nodeorder", "consolidate", "binpack"], 1),
        (["task-topology", "nodeorder", "binpack"], 0),
    ],
)
def test_the_kept_values_sum_the_local_plugins_up_to_the_first_that_is_not(names: list[str], kept: int) -> None:
    layout = hook_layout(with_order(volcano(), names), registry())
    assert (layout.local_order, layout.node_order_plugins) == (kept, len(names))


def test_nodes_in_a_state_seen_before_take_the_remembered_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """Identical nodes filled one pod at a time pass through the same few states: each state's value is
    computed once, and every answer is still the long way's."""
    computed: list[int] = []
    values = placement._values

    def counting(ssn: Session, task: TaskInfo, future: bool, nodes: Indices | None) -> Scores:
        if nodes is not None:
            computed.append(len(nodes))
        return values(ssn, task, future, nodes)

    monkeypatch.setattr(placement, "_values", counting)
    state = ClusterState()
    state.set_nodes([make_node(f"n{i:02d}", resources={"cpu": "8", "nvidia.com/gpu": "4"}) for i in range(12)])
    layout = hook_layout(volcano(), registry())
    placements = Placements(layout)
    pg = make_podgroup("fill", min_member=1)
    state.set_podgroup(pg)
    pods = [state.set_pod(make_pod("fill", "w", i, requests={"nvidia.com/gpu": "1"}), pg.key) for i in range(48)]
    for task in pods:
        assert task is not None
        ssn = Session(state, volcano(), 0.0, registry(), layout)
        node = placements.best(ssn, task, False)
        assert node == ssn.best_node(task, ssn.feasible(task, ssn.free(False)))
        Statement(ssn).allocate(task, node)
    assert all(t is not None and t.status is TaskStatus.ALLOCATED for t in pods)  # 12 nodes × 4 GPUs: all placed
    assert sum(computed) == 4  # a node with 1, 2, 3, 4 GPUs used: computed once each, remembered for the rest
