"""The metrics on examples small enough to compute by hand."""

from __future__ import annotations

import numpy as np
import pytest

from caldera.sim import metrics as m


def job(name: str, submit: float, start: float | None, end: float | None, *, gpus: float = 1, queue: str = "a"):
    return m.JobRecord(name, queue, gpus, submit, start, end)


JOBS = [
    job("j1", 0, 0, 10),  # JCT 10, delay 0
    job("j2", 0, 5, 25),  # JCT 25, delay 5
    job("j3", 10, 10, 40),  # JCT 30, delay 0
    job("j4", 20, 30, 120),  # JCT 100, delay 10
    job("j5", 30, None, None),  # never started
]


def test_jct_average_median_p99_leave_unfinished_jobs_out() -> None:
    jcts = m.jcts(JOBS)
    assert sorted(jcts) == [10, 25, 30, 100]
    assert m.mean(jcts) == pytest.approx(41.25)
    assert m.median(jcts) == pytest.approx(27.5)  # even count: the mean of 25 and 30
    assert m.median([3.0, 1.0, 2.0]) == 2.0
    assert m.percentile(jcts, 99) == 100  # nearest rank: ceil(0.99 × 4) = 4th
    assert m.percentile(list(range(1, 101)), 99) == 99
    assert m.median([]) is None and m.percentile([], 99) is None and m.mean([]) is None


def test_queue_delay_and_makespan() -> None:
    assert m.queue_delays(JOBS) == [0, 5, 0, 10]
    assert m.makespan(JOBS) == 120  # last end 120 − first submit 0
    assert m.makespan([job("x", 5, None, None)]) is None


def test_utilisation_is_a_step_series_of_held_gpus_over_cluster_gpus() -> None:
    held = [m.Holding("a", 2, 0, 10), m.Holding("a", 1, 5, 20)]  # 4-GPU cluster
    s = m.utilisation(held, 4, 0, 20)
    assert s.times.tolist() == [0, 5, 10, 20]
    assert s.values.tolist() == [0.5, 0.75, 0.25, 0.0]
    # GPU-seconds 2×10 + 1×15 = 35 over 4 GPUs × 20 s = 0.4375
    assert float(s.mean(0, 20)) == pytest.approx(35 / 80)
    assert float(s.mean(0, 10)) == pytest.approx((0.5 * 5 + 0.75 * 5) / 10)


@pytest.mark.parametrize(
    ("capacity", "demands", "weights", "expected"),
    [
        pytest.param(8, [10, 10], [1, 1], [4, 4], id="equal-weights-split"),
        pytest.param(8, [2, 10], [1, 1], [2, 6], id="small-demand-satisfied-rest-to-other"),
        pytest.param(9, [10, 10], [2, 1], [6, 3], id="weights-2-to-1"),
        pytest.param(10, [1, 2, 3], [1, 1, 1], [1, 2, 3], id="under-capacity-all-satisfied"),
        pytest.param(12, [0, 10, 10], [5, 1, 1], [0, 6, 6], id="no-demand-no-share"),
        pytest.param(12, [3, 8, 20], [1, 1, 2], [3, 3, 6], id="max-min-cascade"),
    ],
)
def test_water_fill(capacity: float, demands: list[float], weights: list[float], expected: list[float]) -> None:
    out = m.water_fill(capacity, np.array([demands], dtype=float), np.array(weights, dtype=float))
    assert out[0].tolist() == pytest.approx(expected)


def test_water_fill_rows_are_independent() -> None:
    out = m.water_fill(8, np.array([[10, 10], [2, 10], [0, 0]], dtype=float), np.array([1.0, 1.0]))
    assert out.tolist() == [[4, 4], [2, 6], [0, 0]]


def test_jains_index() -> None:
    assert m.jain([1, 1, 1, 1]) == 1.0
    assert m.jain([1, 0, 0, 0]) == pytest.approx(0.25)  # one of n served: 1/n
    assert m.jain([1, 2]) == pytest.approx(9 / 10)  # (1+2)² / (2 × (1+4))
    assert m.jain([0, 0]) == 1.0
    assert m.jain([]) is None


def test_shares_and_jain_over_time() -> None:
    """Queues a and b (weight 1 each), 4 GPUs. Both ask for 4 GPUs over [0, 10); a holds all 4 for [0, 10)
    while b waits, then b holds 4 over [10, 20) when a is done."""
    jobs = [job("a1", 0, 0, 10, gpus=4, queue="a"), job("b1", 0, 10, 20, gpus=4, queue="b")]
    held = [m.Holding("a", 4, 0, 10), m.Holding("b", 4, 10, 20)]
    s = m.shares(jobs, held, {"a": 1, "b": 1}, 4, 20)
    assert s.queues == ("a", "b")
    assert s.held.times.tolist() == [0, 10, 20]
    assert s.held.values.tolist() == [[1, 0], [0, 1], [0, 0]]
    assert s.deserved.values.tolist() == [[0.5, 0.5], [0, 1], [0, 0]]  # [10, 20): b alone wants GPUs
    # [0, 10): held/deserved = (2, 0): Jain 0.5; [10, 20): b alone, 1/1: Jain 1. Equal lengths: 0.75.
    assert m.jain_over_time(s) == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("gpus", "cls"),
    [
        (1, "1"),
        (0.5, "1"),
        (2, "2-4"),
        (4, "2-4"),
        (5, "5-8"),
        (8, "5-8"),
        (9, "9-32"),
        (32, "9-32"),
        (33, ">32"),
        (128, ">32"),
    ],
)
def test_size_classes(gpus: float, cls: str) -> None:
    assert m.size_class(gpus) == cls


def test_longest_wait_per_size_class_counts_jobs_still_waiting() -> None:
    jobs = [
        job("s1", 0, 3, 10, gpus=1),
        job("s2", 0, 7, 10, gpus=1),
        job("m1", 0, 2, 10, gpus=8),
        job("big", 10, None, None, gpus=64),  # still waiting at the horizon 100: waited 90 so far
    ]
    assert m.longest_waits(jobs, 100) == {"1": 7, "5-8": 2, ">32": 90}


def test_a_wait_after_a_preemption_counts_where_up_times_are_reported() -> None:
    """Started at once (queueing delay 0), preempted, resumed: submitted 0, ended 10,000, up 4,000 s in all:
    it waited 6,000 s. A job still up at the horizon waited only before it came up."""
    preempted = m.JobRecord("p", "q", 16, 0.0, 0.0, 10_000.0, preemptions=1, run_seconds=4000.0)
    running = m.JobRecord("r", "q", 1, 0.0, 50.0, None, run_seconds=950.0)
    assert m.longest_waits([preempted, running], 1000.0) == {"1": 50.0, "9-32": 6000.0}
