"""What the scheduler keeps between cycles for speed changes no decision, and a cycle leaves nothing behind.

Node scores are kept per request until a node's CPU or memory use changes, deserved shares are
worked out lazily when every queue's request fits, and a finished session is unlinked from its
plugins so that it is freed at once (a replay pauses the cycle collector and relies on it).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from caldera.core import objects as o
from caldera.scheduler.framework import Plugin
from caldera.scheduler.plugins.nodeorder import NodeOrder
from caldera.scheduler.plugins.proportion import Proportion
from caldera.scheduler.plugins.registry import registry
from caldera.scheduler.policies import POLICIES, load_policy
from caldera.scheduler.scheduler import Scheduler
from caldera.scheduler.session import Session
from caldera.scheduler.state import ClusterState
from caldera.testing.builders import make_node, make_pod, make_podgroup


def cluster(nodes: int = 3, cpu: str = "8", gpus: str = "4") -> ClusterState:
    state = ClusterState()
    state.set_nodes(
        [make_node(f"n{i}", resources={"cpu": cpu, "memory": "32Gi", "nvidia.com/gpu": gpus}) for i in range(nodes)]
    )
    return state


def job(state: ClusterState, name: str, pods: int, *, queue: str = "default", created: float = 0.0, **req: str) -> None:
    pg = make_podgroup(name, min_member=pods, queue=queue, created=created)
    state.set_podgroup(pg)
    for i in range(pods):
        state.set_pod(make_pod(name, "worker", i, requests=dict(req) or {"nvidia.com/gpu": "1"}), pg.key)


def reference_scores(state: ClusterState, cpu: float, memory: float) -> np.ndarray:
    """kube-scheduler's least-requested + balanced-resource scores, as numpy computes them."""
    frac = []
    for name, req in (("cpu", cpu), ("memory", memory)):
        d = state.dim[name]
        alloc = state.alloc[d]
        frac.append(np.divide(state.used[d] + req, alloc, out=np.ones_like(alloc), where=alloc > 0))
    f = np.clip(np.vstack(frac), 0.0, 1.0)
    return (1.0 - f.mean(axis=0)) * 100.0 + (1.0 - f.std(axis=0)) * 100.0


def test_node_scores_follow_every_change_of_cpu_use() -> None:
    state = cluster()
    config = load_policy("caldera-default")
    job(state, "probe", 1, cpu="1", memory="1Gi")
    probe = state.tasks["default/probe-worker-0"]
    nodes = np.arange(3)
    for step, node in enumerate(["n0", "n0", "n2", "n1"]):
        ssn = Session(state, config, 0.0, registry())
        scores = ssn.plugin("nodeorder")
        assert isinstance(scores, NodeOrder)
        got = scores.node_order(probe, nodes)
        assert got is not None
        assert np.array_equal(got, reference_scores(state, probe.req[state.dim["cpu"]], probe.req[state.dim["memory"]]))
        assert np.array_equal(scores.node_order(probe, np.array([2, 0])), got[[2, 0]])
        # a pod using 2 CPUs starts on `node`: the scores must move with it
        pg = make_podgroup(f"busy{step}", min_member=1)
        state.set_podgroup(pg)
        state.set_pod(make_pod(f"busy{step}", "w", 0, requests={"cpu": "2"}, node=node, phase=o.POD_RUNNING), pg.key)
    state.check_invariants()


@pytest.mark.parametrize(
    ("asks", "deserved"),
    [
        pytest.param((3, 2), (3, 2), id="everyone-fits"),
        pytest.param((8, 8), (6, 6), id="water-filled"),
        pytest.param((14, 1), (11, 1), id="what-one-leaves-goes-to-the-other"),
    ],
)
def test_deserved_gpus_by_queue(asks: tuple[int, int], deserved: tuple[int, int]) -> None:
    state = cluster(nodes=3, gpus="4")  # 12 GPUs
    for q in ("a", "b"):
        state.set_queue(o.Queue(o.ObjectMeta(name=q, namespace="")))
    for q, n in zip(("a", "b"), asks, strict=True):
        job(state, f"job-{q}", n, queue=q)
    state.check_invariants()  # the queues' total request among them
    ssn = Session(state, load_policy("caldera-default"), 0.0, registry())
    plugin = ssn.plugin("proportion")
    assert isinstance(plugin, Proportion)
    gpu = state.dim["nvidia.com/gpu"]
    got = tuple(round(float(plugin.deserved[q][gpu]) / 1000.0, 6) for q in ("a", "b"))
    assert got == deserved
    assert float(plugin.deserved["default"][gpu]) == 0.0
    assert plugin.deserved.get("no-such-queue") is None


@pytest.mark.parametrize("policy", POLICIES)
def test_a_cycle_leaves_no_cyclic_garbage(policy: str) -> None:
    state = cluster()
    for i in range(6):
        job(state, f"j{i}", 1 + i % 3, created=float(i))
    scheduler = Scheduler(load_policy(policy))
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        for t in range(3):
            scheduler.run_cycle(state, now=float(t))
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [x for x in gc.garbage if isinstance(x, Session | Plugin)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert left == []


def test_a_plugin_parsing_its_arguments_twice_gets_each_answer() -> None:
    """`Plugin.settings` keeps what a parser made of a configuration's arguments; a second parser of the same
    plugin once got the first one's answer back."""
    state = cluster()
    ssn = Session(state, load_policy("caldera-default"), 0.0, registry())
    plugin = ssn.plugin("proportion")
    assert plugin.settings(lambda p: p.arg_bool("proportion.borrow", False)) is True
    assert plugin.settings(lambda p: p.arg_float("proportion.absent", 7.0)) == 7.0


def _observe(state: ClusterState, name: str, pods: int, node: dict[str, str], phase: str) -> None:
    pg_key = f"default/{name}"
    for i in range(pods):
        pod = make_pod(name, "worker", i, node=node[f"default/{name}-worker-{i}"], phase=phase)
        state.set_pod(pod, pg_key)


def test_a_pod_seen_running_after_its_bind_leaves_its_job_clean() -> None:
    # A PodGroup's status reads a task's status only as ready, placed, finished or pending: Bound → Running
    # changes none of them, so it must not cost a scheduling cycle (the control plane runs one for a dirty job).
    state = cluster()
    job(state, "a", 2)
    result = Scheduler().run_cycle(state, 0.0)
    placed = {b.pod: b.node for b in result.binds}
    assert len(placed) == 2 and [u.phase for u in result.podgroups] == [o.PG_RUNNING]
    _observe(state, "a", 2, placed, o.POD_PENDING)  # the binds seen: Binding → Bound
    assert not state.dirty_jobs
    _observe(state, "a", 2, placed, o.POD_RUNNING)
    assert not state.dirty_jobs
    _observe(state, "a", 2, placed, o.POD_SUCCEEDED)  # finished: the group may be Completed
    assert state.dirty_jobs == {"default/a"}


def test_a_job_whose_status_came_from_its_session_is_looked_at_again() -> None:
    # Without the gang plugin a job is placed pod by pod: 2 of 3 placed and the third unschedulable is
    # Volcano's Unknown phase, a verdict of that session only; the next cycle must write its status again
    # when a pod of it moves, even between statuses alike for the group.
    state = cluster(nodes=1, gpus="2")
    job(state, "a", 3)
    result = Scheduler(load_policy("fifo-nogang")).run_cycle(state, 0.0)
    placed = {b.pod: b.node for b in result.binds}
    assert len(placed) == 2 and [u.phase for u in result.podgroups] == [o.PG_UNKNOWN]
    state.set_pod(make_pod("a", "worker", 0, node=placed["default/a-worker-0"]), "default/a")
    assert state.dirty_jobs == {"default/a"}


def test_a_group_whose_minimum_its_owner_raised_gets_its_status_again() -> None:
    # Another operator's PodGroup (Kubernetes mode) edited to need more pods than run: its status is measured
    # against the new minimum at the next cycle, not left Running until one of its pods happens to move.
    state = cluster()
    job(state, "a", 2)
    placed = {b.pod: b.node for b in Scheduler().run_cycle(state, 0.0).binds}
    _observe(state, "a", 2, placed, o.POD_RUNNING)
    Scheduler().run_cycle(state, 1.0)
    raised = make_podgroup("a", min_member=3)
    raised.phase, raised.conditions = o.PG_RUNNING, list(state.jobs["default/a"].pg_conditions)
    state.set_podgroup(raised)
    assert state.dirty_jobs == {"default/a"}
    assert [u.phase for u in Scheduler().run_cycle(state, 2.0).podgroups] == [o.PG_PENDING]
