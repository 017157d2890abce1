"""The reservation plugin, hand-computed timelines: a never-started gang waiting past
`reservation.waiting-time` holds what frees up for it, while the GPUs it lacks are expected back within
`reservation.horizon`. Opt-in: caldera-default does not use it (docs/policies.md says why)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from caldera.scheduler.config import parse_config
from caldera.scheduler.plugins.registry import registry
from caldera.scheduler.plugins.reservation import Reservation
from caldera.scheduler.policies import policy_text
from caldera.scheduler.session import Session
from caldera.scheduler.state import ClusterState
from caldera.testing.builders import make_node, make_pod, make_podgroup
from caldera.testing.scenario import arrival, cluster, gpu_nodes, queue, run_scenario, start_time, task, vcjob, workload

DEFAULT = policy_text("caldera-default")


def config(waiting: str, horizon: str) -> str:
    """caldera-default with the reservation plugin before las (so its target goes first in each queue)."""
    plugin = (
        "  - name: reservation\n"
        "    arguments:\n"
        f"      reservation.waiting-time: {waiting}\n"
        f"      reservation.horizon: {horizon}\n"
        "  - name: las\n"
    )
    assert DEFAULT.count("  - name: las\n") == 1
    return DEFAULT.replace("  - name: las\n", plugin)


def backfilled(config_text: str) -> dict[str, Any]:
    """8 GPUs, queues a and b, no job checkpoints (so las preempts none). r1 (4 GPUs, 1,000 s) and s1 (4 GPUs,
    500 s) start at once; big (8 GPUs, 100 s) arrives at 2 and cannot fit; s1 ends at 501; s2 (4 GPUs,
    1,000 s) arrives at 700. Without a reservation s2 takes s1's 4 GPUs at 700 and big waits for s2 (1,700).
    With one (waiting time 600 s), big is the target at 700: it holds s1's 4 GPUs, r1 has run 700 s and is
    expected to end at 1,400 (within the horizon), so s2 waits; r1 ends at 1,000 and big starts, then s2.
    (r1 is in another queue: a gang its own queue's capability stops, here the whole cluster, holds nothing.)"""
    return run_scenario(
        cluster=cluster(nodes=[gpu_nodes(count=1, gpus=8)], queues=[queue("a"), queue("b")]),
        workload=workload(
            arrival(vcjob("r1", queue="b", tasks=[task(replicas=4)]), duration=1000),
            arrival(vcjob("s1", queue="a", tasks=[task(replicas=4)]), duration=500),
            arrival(vcjob("big", queue="a", tasks=[task(replicas=8)]), at=2, duration=100),
            arrival(vcjob("s2", queue="a", tasks=[task(replicas=4)]), at=700, duration=1000),
        ),
        config=config_text,
    )


def test_a_starving_gang_holds_the_gpus_that_free_up() -> None:
    report = backfilled(config("10m", "1h"))
    assert start_time(report, "big") == 1000.0
    assert start_time(report, "s2") == 1100.0


def test_before_its_waiting_time_later_jobs_backfill() -> None:
    report = backfilled(config("1h", "1h"))
    assert start_time(report, "s2") == 700.0
    assert start_time(report, "big") == 1700.0


def test_no_reservation_when_the_gpus_it_lacks_are_not_expected_back_within_the_horizon() -> None:
    """r1 has run 700 s, so it is expected to run until 1,400: 700 s away, beyond a 10-minute horizon."""
    report = backfilled(config("10m", "10m"))
    assert start_time(report, "s2") == 700.0
    assert start_time(report, "big") == 1700.0


@pytest.mark.parametrize("bad", ["soon", "-5m"], ids=["not-a-duration", "negative"])
def test_a_bad_setting_is_named(bad: str) -> None:
    with pytest.raises(ValueError, match=r"plugin reservation: reservation\.waiting-time must"):
        backfilled(config(bad, "1h"))


def election(ran_before: bool) -> str | None:
    """One node of 4 GPUs, all free; 'old' (submitted at 0) and 'new' (at 100) each wait with a 4-pod gang.
    At 5,000 s both have waited past 10 minutes: the target is the one waiting longest that never ran."""
    state = ClusterState()
    state.set_nodes([make_node("n0", resources={"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"})])
    for name, created in (("old", 0.0), ("new", 100.0)):
        pg = make_podgroup(name, min_member=4, created=created)
        state.set_podgroup(pg)
        for i in range(4):
            state.set_pod(make_pod(name, "worker", i, created=created), pg.key)
    if ran_before:
        state.jobs["default/old"].service.epoch = 50.0  # it ran once and was stopped: las promotes it, not this
    ssn = Session(state, parse_config(config("10m", "1h"), "test"), 5000.0, registry())
    target = cast(Reservation, ssn.plugin("reservation")).target()
    return None if target is None else target.name


@pytest.mark.parametrize(("ran_before", "elected"), [(False, "old"), (True, "new")], ids=["never-ran", "ran-before"])
def test_the_target_is_the_never_started_job_waiting_longest(ran_before: bool, elected: str) -> None:
    assert election(ran_before) == elected
