"""The elastic speed-up model (Pollux's goodput form) and elastic progress, computed by hand."""

from __future__ import annotations

import math

import pytest

from caldera.sim.costs import FREE, Costs
from caldera.sim.progress import Progress
from caldera.sim.speedup import MODEL, REFERENCE, Speedup, from_annotations
from caldera.sim.traces import elastic_range_of

JOB = "default/e"
MEDIUM = 1024.0  # φ of the Medium class


def pod(i: int) -> str:
    return f"default/e-worker-{i}"


def test_step_time_is_the_p_norm_of_compute_and_network() -> None:
    """Compute 0.1 + 0.004 × 32 = 0.228 s; network 0 alone, 0.05 + 0.002 (n − 2) in a node,
    0.15 + 0.005 (n − 2) across nodes; γ = 2: T = √(0.228² + T_n²)."""
    s = Speedup(2, MEDIUM)
    assert s.step_time(1, 1) == pytest.approx(0.228)
    assert s.step_time(2, 1) == pytest.approx(math.sqrt(0.228**2 + 0.05**2))  # 0.233418
    assert s.step_time(4, 1) == pytest.approx(math.sqrt(0.228**2 + 0.054**2))  # 0.234307
    assert s.step_time(4, 2) == pytest.approx(math.sqrt(0.228**2 + 0.16**2))  # 0.278539


def test_rate_is_goodput_relative_to_the_submitted_size() -> None:
    """n₀ = 2, M₀ = 64. On 2: 64 / 0.233418 = 274.186 samples/s, efficiency 1: rate 1.
    On 1 (accumulating to 64): 32 / 0.228 = 140.351: rate 0.5119.
    On 4 in a node: 128 / 0.234307 = 546.29 × (1024 + 64) / (1024 + 128) = 0.94444 → 515.94: rate 1.8817.
    On 4 over 2 nodes: 128 / 0.278539 = 459.54 × 0.94444 = 434.01: rate 1.5829."""
    s = Speedup(2, MEDIUM)
    assert s.rate(2, 1) == pytest.approx(1.0)
    assert s.rate(1, 1) == pytest.approx(140.351 / 274.186, rel=1e-4)
    assert s.rate(4, 1) == pytest.approx(515.94 / 274.186, rel=1e-4)
    assert s.rate(4, 2) == pytest.approx(434.01 / 274.186, rel=1e-4)


def test_a_noisier_gradient_scales_further() -> None:
    small, xlarge = Speedup(8, 256.0), Speedup(8, 16384.0)
    assert small.rate(32, 4) < 1.05
    assert xlarge.rate(32, 4) > 2.0
    assert small.best_size(32) == 8  # more workers buy a Small job nothing
    assert xlarge.best_size(32) == 30  # within 5 % of the best at 32


def test_a_trace_job_made_elastic() -> None:
    """A 2-GPU job of 2 h is Medium (4 GPU-hours): from 1 worker to 8 (its goodput up to 4 × 2)."""
    e = elastic_range_of(2, 7200.0, 64)
    assert (e.low, e.high, e.model) == (1, 8, "medium")
    assert from_annotations({MODEL: "medium", REFERENCE: "2"}) == Speedup(2, MEDIUM)
    assert from_annotations({MODEL: "huge", REFERENCE: "2"}) is None


def elastic(costs: Costs = FREE, min_available: int = 1) -> Progress:
    p = Progress(costs)
    p.add_job(JOB, min_available, 0.0, Speedup(2, MEDIUM))
    return p


G2 = 64 / math.sqrt(0.228**2 + 0.05**2)  # goodput on 2 workers (n₀), in a node
R1 = (32 / 0.228) / G2  # 0.5119
R4 = (128 / math.sqrt(0.228**2 + 0.054**2)) * (1088 / 1152) / G2  # 1.8817


def test_an_elastic_job_grows_and_shrinks_free() -> None:
    """100 s of work at n₀ = 2. One worker from 0: rate 0.5119, ends at 195.35. A second at 10 (5.119 done):
    rate 1, ends at 104.881. Two more at 20 (15.119 done): rate 1.8817, ends at 20 + 84.881 / 1.8817 = 65.108.
    Two leave at 30 (33.936 done): back to rate 1, ends at 30 + 66.064 = 96.064."""
    p = elastic()
    assert p.start(JOB, pod(0), 100.0, 1.0, False, now=0.0, node="a") == [(pod(0), pytest.approx(100.0 / R1))]
    ends = dict(p.start(JOB, pod(1), 100.0, 1.0, False, now=10.0, node="a"))
    assert ends == {pod(0): pytest.approx(110.0 - 10.0 * R1), pod(1): pytest.approx(110.0 - 10.0 * R1)}
    p.start(JOB, pod(2), 100.0, 1.0, False, now=20.0, node="a")
    ends = dict(p.start(JOB, pod(3), 100.0, 1.0, False, now=20.0, node="a"))
    done20 = 10.0 * R1 + 10.0
    assert ends[pod(0)] == pytest.approx(20.0 + (100.0 - done20) / R4, rel=1e-6)
    assert p.stop(pod(3), now=30.0) != []  # 3 workers for an instant
    ends = dict(p.stop(pod(2), now=30.0))
    done30 = done20 + 10.0 * R4
    assert ends == {pod(0): pytest.approx(30.0 + 100.0 - done30), pod(1): pytest.approx(30.0 + 100.0 - done30)}
    assert ends[pod(0)] == pytest.approx(96.064, abs=1e-3)
    assert p.ends_now(pod(0), ends[pod(0)])
    assert p.report(JOB, 30.0).lost_gpu_seconds == 0.0


def test_each_resize_pays_a_restart() -> None:
    """resume 30 s: two workers from 0 (nothing to load: no delay) end at 100; two more join at 40
    (40 done): training resumes at 70 at rate 1.8817 and ends at 70 + 60 / 1.8817 = 101.886, later
    than without growing. Overhead: 4 GPUs × 30 s."""
    p = elastic(Costs(resume=30.0))
    p.start(JOB, pod(0), 100.0, 1.0, False, now=0.0, node="a")
    assert dict(p.start(JOB, pod(1), 100.0, 1.0, False, now=0.0, node="a"))[pod(1)] == pytest.approx(100.0)
    p.start(JOB, pod(2), 100.0, 1.0, False, now=40.0, node="a")
    ends = dict(p.start(JOB, pod(3), 100.0, 1.0, False, now=40.0, node="a"))
    assert ends[pod(3)] == pytest.approx(70.0 + 60.0 / R4, rel=1e-6)
    assert p.report(JOB, 50.0).overhead_gpu_seconds == pytest.approx(4 * 30.0)  # one restart for both


def test_below_its_minimum_an_elastic_job_stops_at_its_checkpoint() -> None:
    """min 2, checkpoint every 30 s: two workers from 0 at rate 1; one stops at 70: down with 60 kept,
    10 s × 2 GPUs lost. Back up at 100 with two workers: ends at 140."""
    p = Progress(Costs())
    p.add_job(JOB, 2, 30.0, Speedup(2, MEDIUM))
    p.start(JOB, pod(0), 100.0, 1.0, False, now=0.0, node="a")
    p.start(JOB, pod(1), 100.0, 1.0, False, now=0.0, node="a")
    assert p.stop(pod(1), now=70.0) == []
    assert p.report(JOB, 70.0).lost_gpu_seconds == pytest.approx(20.0)
    assert not p.will_end(pod(0))
    assert dict(p.start(JOB, pod(1), 100.0, 1.0, False, now=100.0, node="a")) == {pod(0): 140.0, pod(1): 140.0}
