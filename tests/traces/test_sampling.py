"""Choosing the part of a trace to replay: windows, job counts, rate scale and the seeded Pollux/Sia sample."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from caldera.core.errors import ValidationError
from caldera.sim.pollux import eligible, pollux_sample, size_class
from caldera.sim.sampling import Window, parse_window, take

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
    trace = rows(2000, every=30)  # ~16.7 hours from midnight: 960 jobs between 02:00 and 10:00
    first = pollux_sample(trace, seed=7, max_gpus=64)
    again = pollux_sample(trace, seed=7, max_gpus=64)
    other = pollux_sample(trace, seed=8, max_gpus=64)
    assert first == again
    assert [d.row.line for d in first.jobs] != [d.row.line for d in other.jobs]
    assert len(first.jobs) == 160 and len({d.row.line for d in first.jobs}) == 160
    assert [d.at for d in first.jobs] == sorted(d.at for d in first.jobs)
    assert all(0 <= d.at < 8 * 3600 and d.at == d.row.submit - T0 - 2 * 3600 for d in first.jobs)


def test_the_pollux_sample_folds_every_day_onto_one() -> None:
    """Jobs submitted at 03:00 on different days all arrive 1 hour into the run; 11:00 is outside."""
    day = 86400.0
    trace = [Row(i + 2, T0 + i * day + 3 * 3600) for i in range(5)] + [Row(9, T0 + 11 * 3600)]
    s = pollux_sample(trace, seed=0, max_gpus=64, jobs=5)
    assert sorted(d.row.line for d in s.jobs) == [2, 3, 4, 5, 6]
    assert {d.at for d in s.jobs} == {3600.0}
    assert "between 02:00 and 10:00 of any day" in s.description


def test_pollux_keeps_jobs_of_a_minute_to_1000_gpu_hours_that_fit_the_cluster() -> None:
    trace = [
        Row(2, T0, duration=59),
        Row(3, T0, duration=60),
        Row(4, T0, duration=3600, gpus=1000),  # exactly 1,000 GPU-hours: out
        Row(5, T0, duration=3600, gpus=999),  # fits the GPU-hour cap, not a 64-GPU cluster
        Row(6, T0, duration=3600, gpus=64),
    ]
    assert [r.line for r in eligible(trace, 64)] == [3, 6]
    assert [r.line for r in eligible(trace, 1000)] == [3, 5, 6]


@pytest.mark.parametrize(
    ("gpus", "hours", "size"),
    [(1, 0.99, 0), (1, 1, 1), (4, 2.4, 1), (8, 2, 2), (1, 99.9, 2), (16, 6.25, 3), (2, 400, 3)],
)
def test_size_classes_are_pollux_gpu_hour_classes(gpus: float, hours: float, size: int) -> None:
    assert size_class(Row(2, T0, duration=hours * 3600, gpus=gpus)) == size


def test_large_and_xlarge_jobs_run_as_a_same_class_job_of_at_most_a_day() -> None:
    """A 1-GPU job of 500 h (XLarge) arrives as itself but runs as the pool's only XLarge job of <= 24 h."""
    hour = 3600.0
    trace = [
        Row(2, T0 + 3 * hour, duration=500 * hour, gpus=1),  # XLarge, three weeks long
        Row(3, T0 + 4 * hour, duration=20 * hour, gpus=8),  # XLarge (160 GPU-h), under a day: the stand-in
        Row(4, T0 + 5 * hour, duration=0.5 * hour, gpus=1),  # Small: runs as itself
        Row(5, T0 + 6 * hour, duration=30 * hour, gpus=2),  # Large (60 GPU-h), but over a day: no stand-in of it
    ]
    s = pollux_sample(trace, seed=0, max_gpus=64, jobs=3, hours=3.5)  # 02:00-05:30: lines 2, 3, 4
    by_line = {d.row.line: d for d in s.jobs}
    assert sorted(by_line) == [2, 3, 4]
    assert by_line[2].work.line == 3 and by_line[2].at == hour and by_line[2].stand_in
    assert by_line[3].work.line == 3
    assert by_line[4].work is by_line[4].row
    assert s.description.endswith("Large/XLarge jobs run as a same-class job of at most 24 h: 1")


def test_pollux_with_too_few_jobs_says_so() -> None:
    with pytest.raises(ValidationError, match="only 0 eligible jobs were submitted between 02:00 and 10:00"):
        pollux_sample(rows(100), seed=0, max_gpus=64)  # midnight to 01:40
    with pytest.raises(ValidationError, match="holds 100 eligible jobs, fewer than the 160"):
        pollux_sample(rows(100), seed=0, max_gpus=64, window=parse_window("0:"))
    assert len(pollux_sample(rows(100), seed=0, max_gpus=64, jobs=50, window=parse_window("0:")).jobs) == 50
    with pytest.raises(ValidationError, match="at most 24"):
        pollux_sample(rows(100), seed=0, max_gpus=64, hours=25)
