"""caldera-default's mechanisms, one scenario each: borrowing beyond a queue's share, gangs kept on few
nodes, jobs that cannot checkpoint spared, and a gang that cannot fit not holding its queue hostage."""

from __future__ import annotations

from typing import Any

from caldera.core import objects as o
from caldera.scheduler.config import parse_config
from caldera.scheduler.policies import policy_text
from caldera.scheduler.scheduler import Scheduler
from caldera.scheduler.state import ClusterState
from caldera.sim.engine import CHECKPOINT_INTERVAL
from caldera.testing.builders import make_node, make_pod, make_podgroup
from caldera.testing.scenario import (
    arrival,
    cluster,
    evictions,
    gpu_nodes,
    job_row,
    queue,
    run_scenario,
    start_time,
    task,
    vcjob,
    workload,
)

DEFAULT = policy_text("caldera-default")
NO_BORROW = DEFAULT.replace("proportion.borrow: true", "proportion.borrow: false")
LOSSLESS = {CHECKPOINT_INTERVAL: "0"}


def two_queues(config: str) -> dict[str, Any]:
    """8 GPUs, queues a and b. a runs a1 (2 GPUs, checkpointing) and waits with a2 (8 GPUs, cannot fit
    while a1 runs); b submits a 5-GPU gang. Both queues ask for more than half: each deserves 4, so b's
    gang is bigger than b's share while 6 GPUs are idle."""
    return run_scenario(
        cluster=cluster(nodes=[gpu_nodes(count=1, gpus=8)], queues=[queue("a"), queue("b")]),
        workload=workload(
            arrival(vcjob("a1", queue="a", tasks=[task(replicas=2)], annotations=LOSSLESS), duration=5000),
            arrival(vcjob("a2", queue="a", tasks=[task(replicas=8)]), at=1, duration=1000),
            arrival(vcjob("b1", queue="b", tasks=[task(replicas=5)]), at=2, duration=1000),
        ),
        config=config,
    )


def test_a_gang_bigger_than_its_queue_share_borrows_idle_gpus() -> None:
    report = two_queues(DEFAULT)
    assert start_time(report, "b1") == 2.0
    assert job_row(report, "b1")["endTime"] == 1002.0


def test_without_borrowing_the_gang_waits_while_the_gpus_idle() -> None:
    """The mechanism that made caldera-default lose: proportion alone keeps b1 out with 6 GPUs idle, until
    a1 reaches level 1 (3,250 GPU-seconds at 1,625 s), a2 preempts it and b1 waits for a2 to end."""
    report = two_queues(NO_BORROW)
    assert start_time(report, "b1") == 2625.0


def holes_and_gang() -> ClusterState:
    """n0 and n1 have one free GPU each (3 of 4 busy), n2 is empty; a 4-pod gang waits."""
    state = ClusterState()
    gpus4 = {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"}
    state.set_nodes([make_node(f"n{i}", resources=gpus4) for i in range(3)])
    state.set_queue(o.Queue(o.ObjectMeta(name="default", namespace="")))
    for node in ("n0", "n1"):
        busy = make_podgroup(f"busy-{node}", min_member=3, phase=o.PG_RUNNING)
        state.set_podgroup(busy)
        for i in range(3):
            state.set_pod(make_pod(f"busy-{node}", "worker", i, node=node, phase=o.POD_RUNNING), busy.key)
    gang = make_podgroup("gang", min_member=4)
    state.set_podgroup(gang)
    for i in range(4):
        state.set_pod(make_pod("gang", "worker", i), gang.key)
    return state


def test_a_gang_goes_to_the_node_that_holds_all_of_it() -> None:
    result = Scheduler(parse_config(DEFAULT, "caldera-default")).run_cycle(holes_and_gang(), now=0.0)
    assert {b.node for b in result.binds} == {"n2"}


def test_binpack_alone_fills_the_holes_first() -> None:
    """The mechanism consolidate fixes: the fullest nodes first spreads the gang over three nodes."""
    config = parse_config(DEFAULT.replace("  - name: consolidate", "  - name: drf"), "without consolidate")
    result = Scheduler(config).run_cycle(holes_and_gang(), now=0.0)
    assert len({b.node for b in result.binds}) == 3


def preempted(checkpoints: bool) -> dict[str, Any]:
    """One GPU. long (1 GPU) has run 5,000 s (level 1) when short arrives (level 0)."""
    annotations = {CHECKPOINT_INTERVAL: "0"} if checkpoints else None
    return run_scenario(
        cluster=cluster(nodes=[gpu_nodes(count=1, gpus=1)]),
        workload=workload(
            arrival(vcjob("long", annotations=annotations), duration=20_000),
            arrival(vcjob("short"), at=5000, duration=100),
        ),
        config=DEFAULT,
    )


def test_a_job_that_checkpoints_is_preempted_for_a_new_one() -> None:
    report = preempted(checkpoints=True)
    assert [e["time"] for e in evictions(report, "long")] == [5000.0]
    assert start_time(report, "short") == 5000.0


def test_a_job_that_cannot_checkpoint_is_spared_past_what_a_preemption_may_cost() -> None:
    """Evicting it would throw away the 5,000 GPU-seconds it has run: las.max-loss is 0, it is never a victim."""
    report = preempted(checkpoints=False)
    assert not evictions(report, "long")
    assert start_time(report, "short") == 20_000.0


def test_a_gang_that_cannot_fit_its_share_does_not_hold_its_queue_hostage() -> None:
    """q1 and q2 deserve 2 of the 4 GPUs each, and q2 uses its two. big (4 GPUs, q1) cannot fit while q2
    runs: small (1 GPU, q1) starts on the free GPUs (nothing is reserved for big)."""
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
    result = Scheduler(parse_config(DEFAULT, "caldera-default")).run_cycle(state, now=3600.0)
    assert [b.pod for b in result.binds] == ["default/small-worker-0"]
    big = next(u for u in result.podgroups if u.job == "big")
    assert big.conditions[-1].type == "Unschedulable"
    state.check_invariants()


def test_a_higher_priority_class_preempts_a_job_that_cannot_checkpoint() -> None:
    """las.max-loss weighs what las's levels gain; a higher PriorityClass preempts whatever the victim loses."""
    report = run_scenario(
        cluster=cluster(nodes=[gpu_nodes(count=1, gpus=1)], priority_classes={"high": 1000}),
        workload=workload(
            arrival(vcjob("long"), duration=20_000),
            arrival(vcjob("vip", priority_class="high"), at=5000, duration=100),
        ),
        config=DEFAULT,
    )
    assert [e["time"] for e in evictions(report, "long")] == [5000.0]
    assert start_time(report, "vip") == 5000.0
