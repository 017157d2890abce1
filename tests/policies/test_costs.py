"""The simulator's costs, computed by hand: start latency, resume, checkpoint save, spread placement."""

from __future__ import annotations

import pytest

from caldera.sim.costs import REALISTIC, Costs, parse_costs
from caldera.sim.progress import Progress

JOB = "default/j"


def pod(i: int) -> str:
    return f"default/j-worker-{i}"


def gang(costs: Costs, min_available: int = 2, checkpoint: float | None = 0.0) -> Progress:
    p = Progress(costs)
    p.add_job(JOB, min_available, checkpoint)
    return p


def test_the_free_model_is_the_old_model() -> None:
    p = gang(Costs())
    p.start(JOB, pod(0), 100.0, 1.0, False, now=0.0, node="a")
    assert dict(p.start(JOB, pod(1), 100.0, 1.0, False, now=0.0, node="b")) == {pod(0): 100.0, pod(1): 100.0}
    assert p.report(JOB, 100.0).overhead_gpu_seconds == 0.0


def test_a_gang_trains_after_its_start_latency() -> None:
    """4 s of start-up: a 100 s run ends at 104; 2 GPUs × 4 s held without progress."""
    p = gang(Costs(start_latency=4.0))
    p.start(JOB, pod(0), 100.0, 1.0, False, now=0.0, node="a")
    assert dict(p.start(JOB, pod(1), 100.0, 1.0, False, now=0.0, node="a")) == {pod(0): 104.0, pod(1): 104.0}
    p.ended(pod(0), 104.0)
    p.ended(pod(1), 104.0)
    assert p.report(JOB, 500.0).overhead_gpu_seconds == pytest.approx(8.0)  # frozen once the job is done


def test_a_preempted_job_pays_its_save_and_its_resume() -> None:
    """Preempted at 50 (latency 4: 46 s done), saving costs 10 s of it (36 kept), resuming at 200 costs
    4 + 30 s before the 64 s left: it ends at 200 + 34 + 64 = 298."""
    p = gang(Costs(start_latency=4.0, resume=30.0, preempt=10.0), min_available=1)
    p.start(JOB, pod(0), 100.0, 1.0, False, now=0.0, node="a")
    p.preempted(JOB, 50.0)
    p.stop(pod(0), now=50.0)
    assert p.report(JOB, 50.0).lost_gpu_seconds == pytest.approx(10.0)
    assert p.start(JOB, pod(0), 100.0, 1.0, False, now=200.0, node="a") == [(pod(0), 298.0)]
    p.ended(pod(0), 298.0)
    assert p.report(JOB, 298.0).overhead_gpu_seconds == pytest.approx(4.0 + 34.0)


def test_a_job_that_cannot_checkpoint_pays_no_save_and_no_restore() -> None:
    """Without a checkpoint everything is lost anyway; the restart from zero pays the start latency only."""
    p = gang(Costs(start_latency=4.0, resume=30.0, preempt=10.0), min_available=1, checkpoint=None)
    p.start(JOB, pod(0), 100.0, 1.0, False, now=0.0, node="a")
    p.preempted(JOB, 50.0)
    p.stop(pod(0), now=50.0)
    assert p.report(JOB, 50.0).lost_gpu_seconds == pytest.approx(46.0)
    assert p.start(JOB, pod(0), 100.0, 1.0, False, now=200.0, node="a") == [(pod(0), 304.0)]


def test_a_stop_that_is_not_a_preemption_saves_for_free() -> None:
    p = gang(Costs(preempt=10.0), min_available=1)
    p.start(JOB, pod(0), 100.0, 1.0, False, now=0.0, node="a")
    p.stop(pod(0), now=50.0)  # a node lost, an eviction: no preemption event at this instant
    assert p.report(JOB, 50.0).lost_gpu_seconds == 0.0


@pytest.mark.parametrize(
    ("nodes", "end"),
    [
        pytest.param(["a", "a", "a", "a"], 100.0, id="consolidated"),
        pytest.param(["a", "a", "b", "b"], 125.0, id="one-node-too-many"),
        pytest.param(["a", "b", "c", "d"], 175.0, id="three-too-many"),
    ],
)
def test_a_gang_spread_over_more_nodes_than_it_needs_runs_slower(nodes: list[str], end: float) -> None:
    """4 GPUs fit one 8-GPU node; spread 0.25 per extra node: speed 1/(1 + 0.25 k), a 100 s run takes 100 (1 + 0.25 k)."""
    p = gang(Costs(spread=0.25, gpus_per_node=8.0), min_available=4)
    out: dict[str, float] = {}
    for i, node in enumerate(nodes):
        out.update(p.start(JOB, pod(i), 100.0, 1.0, False, now=0.0, node=node))
    assert set(out.values()) == {end}
    for i in range(4):
        p.ended(pod(i), end)
    assert p.report(JOB, end).overhead_gpu_seconds == pytest.approx(4 * (end - 100.0))


def test_a_gang_that_needs_two_nodes_is_not_slowed_on_two() -> None:
    costs = Costs(spread=0.25, gpus_per_node=8.0)
    assert costs.speed(16.0, 2) == 1.0
    assert costs.speed(16.0, 3) == pytest.approx(0.8)
    assert costs.speed(1.0, 1) == 1.0


@pytest.mark.parametrize(
    ("text", "costs"),
    [
        pytest.param("free", Costs(), id="free"),
        pytest.param("realistic", REALISTIC, id="realistic"),
        pytest.param("realistic,spread=0", Costs(start_latency=4.0, resume=30.0, preempt=8.0), id="override"),
        pytest.param("resume=60", Costs(resume=60.0), id="from-free"),
    ],
)
def test_cost_models_are_parsed(text: str, costs: Costs) -> None:
    assert parse_costs(text) == costs


@pytest.mark.parametrize("text", ["cheap", "resume=-1", "resume=x", "warmup=3"])
def test_a_bad_cost_model_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=text.partition("=")[0]):
        parse_costs(text)
