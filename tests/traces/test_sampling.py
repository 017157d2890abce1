"""Choosing the part of a trace to replay: windows, job counts, rate scale and the seeded Pollux/Sia sample."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from caldera.core.errors import ValidationError
from caldera.sim.sampling import Window, parse_window, pollux_eligible, pollux_sample, take

T0 = datetime(2017, 10, 1, tzinfo=UTC).timestamp()


@dataclass(frozen=True)
class Row:
    line: int
    submit: float
    duration: float = 600.0
    gpus: float = 1.0


def rows(n: int, every: float = 60.0) -> list[Row]:
    return [Row(i + 2, T0 + i * every) for i in range(n)]


@pytest.mark.parametrize(
    ("text", "window"),
    [
        pytest.param("3600:7200", Window(3600, 7200), id="seconds"),
        pytest.param("3600:", Window(3600, None), id="open-end"),
        pytest.param(":7200", Window(None, 7200), id="open-start"),
        pytest.param(
            "2017-10-01T01:00:00:2017-10-01T02:30:00", Window(T0 + 3600, T0 + 9000, dates=True), id="datetimes"
        ),
        pytest.param("2017-10-01:2017-10-02", Window(T0, T0 + 86400, dates=True), id="dates"),
    ],
)
def test_parse_window(text: str, window: Window) -> None:
    assert parse_window(text) == window


@pytest.mark.parametrize(
    "text", ["soon", "10:5", "3600:2017-10-01", "1:2:3"], ids=["word", "backwards", "mixed", "three"]
)
def test_a_bad_window_names_the_option(text: str) -> None:
    with pytest.raises(ValidationError, match="--window"):
        parse_window(text)


def test_window_then_first_jobs_then_rate_scale() -> None:
    trace = rows(100)  # one a minute
    s = take(trace, window=parse_window("600:1800"), jobs=5, rate_scale=2.0)
    assert [r.line for r in s.rows] == [12, 13, 14, 15, 16]  # submitted at 600, 660, ... seconds
    assert s.origin == T0 + 600 and s.rate_scale == 2.0
    assert "first 5 jobs" in s.description and "2×" in s.description
    dated = take(trace, window=parse_window("2017-10-01T00:10:00:2017-10-01T00:12:00"))
    assert [r.line for r in dated.rows] == [12, 13]
    assert take(trace).rows == trace and take(trace).description == "the whole trace"


def test_dates_need_a_trace_with_dates() -> None:
    with pytest.raises(ValidationError, match="seconds from its start"):
        take(rows(3), window=parse_window("2017-10-01:2017-10-02"), times_are_dates=False)


def test_the_pollux_sample_is_the_same_for_the_same_seed() -> None:
    trace = rows(2000, every=30)  # ~16.7 hours, 960 jobs in any 8 hours
    first = pollux_sample(trace, seed=7, max_gpus=64)
    again = pollux_sample(trace, seed=7, max_gpus=64)
    other = pollux_sample(trace, seed=8, max_gpus=64)
    assert first == again
    assert [r.line for r in first.rows] != [r.line for r in other.rows]
    assert len(first.rows) == 160 and len({r.line for r in first.rows}) == 160
    assert [r.submit for r in first.rows] == sorted(r.submit for r in first.rows)
    assert all(first.origin <= r.submit < first.origin + 8 * 3600 for r in first.rows)
    assert (first.origin - T0) % 3600 == 0  # the window starts on a whole hour


def test_pollux_keeps_jobs_of_a_minute_to_1000_gpu_hours_that_fit_the_cluster() -> None:
    trace = [
        Row(2, T0, duration=59),
        Row(3, T0, duration=60),
        Row(4, T0, duration=3600, gpus=1000),  # exactly 1,000 GPU-hours: out
        Row(5, T0, duration=3600, gpus=999),  # fits the GPU-hour cap, not a 64-GPU cluster
        Row(6, T0, duration=3600, gpus=64),
    ]
    assert [r.line for r in pollux_eligible(trace, 64)] == [3, 6]
    assert [r.line for r in pollux_eligible(trace, 1000)] == [3, 5, 6]


def test_pollux_with_too_few_jobs_says_so() -> None:
    with pytest.raises(ValidationError, match="no 8-hour window of the trace holds 160 eligible jobs"):
        pollux_sample(rows(100), seed=0, max_gpus=64)
    with pytest.raises(ValidationError, match="holds 100 eligible jobs, fewer than the 160"):
        pollux_sample(rows(100), seed=0, max_gpus=64, window=parse_window("0:"))
    assert len(pollux_sample(rows(100), seed=0, max_gpus=64, jobs=50).rows) == 50
