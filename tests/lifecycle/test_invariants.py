"""Invariants of any run, checked on a busy mix (queues, priorities, preemption, restarts, faults, commands)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import pytest

from caldera.sim.engine import Simulation
from caldera.sim.inputs import load
from caldera.sim.report import build

from .simkit import FIXTURES


@pytest.fixture(scope="module")
def run() -> tuple[Simulation, dict[str, Any]]:
    cluster, workload = load(str(FIXTURES / "sim-busy-cluster.yaml"), str(FIXTURES / "sim-busy-workload.yaml"))
    sim = Simulation(cluster, workload)
    sim.run()
    return sim, build(sim)


def test_attempts_are_numbered_in_order_and_never_overlap(run: tuple[Simulation, dict[str, Any]]) -> None:
    _, report = run
    by_pod: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in report["pods"]:
        if p["startTime"] is not None:
            by_pod[p["name"]].append(p)
    assert by_pod
    for name, attempts in by_pod.items():
        attempts.sort(key=lambda a: a["attempt"])
        assert [a["attempt"] for a in attempts] == list(range(len(attempts))), name
        for before, after in itertools.pairwise(attempts):
            assert before["endTime"] is not None and before["endTime"] <= after["startTime"], name


def test_every_start_is_a_bind_or_a_restart_in_place(run: tuple[Simulation, dict[str, Any]]) -> None:
    _, report = run
    starts: dict[str, int] = defaultdict(int)
    for p in report["pods"]:
        if p["startTime"] is not None:
            starts[p["name"]] += 1
    made: dict[str, int] = defaultdict(int)
    for e in report["events"]:
        if e["kind"] in ("Bind", "PodRestart"):
            made[e["object"]] += 1
    assert starts == made


def test_no_node_ever_holds_more_gpus_than_it_has(run: tuple[Simulation, dict[str, Any]]) -> None:
    sim, _ = run
    capacity = {n.name: n.allocatable.get("nvidia.com/gpu", 0.0) for n in sim.cluster.nodes}
    changes: dict[str, list[tuple[float, float]]] = defaultdict(list)
    plane = sim.plane
    for a in [*plane.attempts, *plane.running.values()]:
        gpus = (a.resources or {}).get("nvidia.com/gpu", 0.0)
        if a.start is None or not gpus:
            continue
        changes[a.node].append((a.start, gpus))
        if a.end is not None:
            changes[a.node].append((a.end, -gpus))
    assert changes
    for node, deltas in changes.items():
        used = 0.0
        for _, delta in sorted(deltas, key=lambda d: (d[0], d[1])):  # releases first at the same instant
            used += delta
            assert used <= capacity[node] + 1e-9, node


def test_events_are_in_time_order_and_the_state_is_consistent(run: tuple[Simulation, dict[str, Any]]) -> None:
    sim, report = run
    times = [e["time"] for e in report["events"]]
    assert times == sorted(times)
    sim.plane.state.check_invariants()
    assert not sim.plane.running or all(k in sim.plane.pods for k in sim.plane.running)


def test_the_lost_node_runs_nothing_after_it_went_down(run: tuple[Simulation, dict[str, Any]]) -> None:
    _, report = run
    (down,) = [e for e in report["events"] if e["kind"] == "NodeDown"]
    late = [p for p in report["pods"] if p["node"] == down["object"] and (p["startTime"] or 0) >= down["time"]]
    assert late == []
