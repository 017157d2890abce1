"""The Pollux/Sia sample of the real Philly trace: Pollux's workload recipe, on the shared trace."""

from __future__ import annotations

import pytest

from caldera.core.resources import GPU
from caldera.sim.inputs import JobArrival
from caldera.sim.pollux import HOURS, STAND_IN_MAX_DURATION, START_HOUR, pollux_sample, size_class, time_of_day
from caldera.sim.presets import PHILLY_TRACE, traces_dir
from caldera.sim.sources import Selection, load_inputs
from caldera.sim.traces import read_philly

pytestmark = pytest.mark.skipif(
    not (traces_dir() / PHILLY_TRACE).is_file(), reason="the shared Philly trace is not here"
)


def gpus(arrival: JobArrival) -> float:
    return sum(t.replicas * t.template.spec.requests().get(GPU, 0.0) for t in arrival.job.spec.tasks) / 1000.0


@pytest.mark.parametrize("seed", [1, 5])
def test_the_sample_arrives_over_8_hours_and_runs_jobs_of_at_most_a_day_when_large(seed: int) -> None:
    rows, _ = read_philly(traces_dir() / PHILLY_TRACE)
    by_line = {r.line: r for r in rows}
    inputs = load_inputs(None, None, "philly", Selection(sample="pollux", seed=seed, checkpoint=0.0))
    jobs = inputs.workload.jobs
    assert len(jobs) == 160 and inputs.total_gpus == 64
    assert all(0 <= a.submit_time < HOURS * 3600 for a in jobs)
    assert [a.submit_time for a in jobs] == sorted(a.submit_time for a in jobs)
    for a in jobs:
        row = by_line[int(a.job.name.removeprefix("philly-"))]
        assert a.submit_time == time_of_day(row.submit)  # the drawn row's time of day, from 02:00
        assert a.job.spec.queue == row.queue
        assert a.job.metadata.annotations["caldera.dev/checkpoint-interval"] == "0"
        if size_class(row) < 2:  # Small and Medium run as the trace has them
            assert (a.duration, gpus(a)) == (row.duration, row.gpus)
        else:  # Large and XLarge run as a job of their class that ran at most a day
            assert a.duration is not None and a.duration <= STAND_IN_MAX_DURATION
            assert gpus(a) <= 64
    assert "between 02:00 and 10:00 of any day" in inputs.sample_words and START_HOUR == 2


def test_the_same_seed_draws_the_same_sample_and_another_seed_another() -> None:
    rows, _ = read_philly(traces_dir() / PHILLY_TRACE)
    first = pollux_sample(rows, seed=3, max_gpus=64)
    assert first == pollux_sample(rows, seed=3, max_gpus=64)
    assert [d.row.line for d in first.jobs] != [d.row.line for d in pollux_sample(rows, seed=4, max_gpus=64).jobs]
