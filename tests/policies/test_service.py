"""Attained service as the scheduler keeps it: GPU-seconds from the pods' own times, across runs."""

from __future__ import annotations

from caldera.core import objects as o
from caldera.scheduler.state import ClusterState
from caldera.testing.builders import make_node, make_pod, make_podgroup


def setup(gpus: int = 2) -> tuple[ClusterState, str]:
    state = ClusterState()
    state.set_nodes([make_node("n0", resources={"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "8"})])
    pg = make_podgroup("j", min_member=1)
    state.set_podgroup(pg)
    return state, pg.key


def running(index: int, start: float, gpus: int = 2) -> o.Pod:
    pod = make_pod("j", "worker", index, node="n0", phase=o.POD_RUNNING, requests={"nvidia.com/gpu": str(gpus)})
    pod.status.start_time = start
    return pod


def test_service_accrues_while_pods_run_and_stops_when_they_end() -> None:
    state, key = setup()
    a, b = running(0, 10.0), running(1, 20.0, gpus=1)
    state.set_pod(a, key)
    state.set_pod(b, key)
    service = state.jobs[key].service
    assert service.attained(30.0) == 2 * 20 + 1 * 10
    a.status.phase, a.status.finish_time = o.POD_SUCCEEDED, 40.0
    state.set_pod(a, key)
    assert service.attained(50.0) == 2 * 30 + 1 * 30
    assert service.running == 1 and service.run_ended is None


def test_a_run_cut_short_ends_at_its_deletion_and_the_next_run_adds_to_it() -> None:
    state, key = setup()
    pod = running(0, 0.0)
    state.set_pod(pod, key)
    pod.deletion_timestamp = 100.0  # evicted: the task is Releasing
    state.set_pod(pod, key)
    service = state.jobs[key].service
    assert (service.attained(500.0), service.last_run, service.run_ended) == (200.0, 100.0, 100.0)
    state.remove_task(pod.key)
    again = running(0, 300.0)
    state.set_pod(again, key)
    assert service.attained(350.0) == 200.0 + 2 * 50
    assert service.run_ended is None
    state.check_invariants()


def test_the_jobs_whose_runs_changed_are_named_for_las() -> None:
    state, key = setup()
    state.run_changed.clear()
    state.set_pod(make_pod("j", "worker", 0), key)  # pending: no run
    assert not state.run_changed
    state.set_pod(running(0, 5.0), key)
    assert state.run_changed == {key}
    state.remove_podgroup(key)
    assert not state.run_changed


def test_tentative_decisions_do_not_touch_service() -> None:
    """A statement's evict and its undo move the task, not its run: only observed pods do."""
    from caldera.scheduler.config import default_config
    from caldera.scheduler.plugins.registry import registry
    from caldera.scheduler.session import Session
    from caldera.scheduler.statement import Statement

    state, key = setup()
    state.set_pod(running(0, 0.0), key)
    ssn = Session(state, default_config(), 50.0, registry())
    stmt = Statement(ssn)
    stmt.evict(next(iter(state.jobs[key].tasks.values())), "Preempt", "")
    stmt.discard()
    service = state.jobs[key].service
    assert (service.running, service.attained(50.0)) == (1, 100.0)
