"""Reading the Philly trace: sorted rows, gang jobs, malformed rows reported by line and skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from caldera.core.errors import ValidationError
from caldera.core.resources import GPU
from caldera.sim.traces import philly_arrivals, queues_of, read_philly

from .tracefiles import PHILLY_HEADER, philly_csv, philly_row


def test_rows_are_sorted_by_submit_time_and_become_gangs(tmp_path: Path) -> None:
    path = philly_csv(
        tmp_path,
        [
            philly_row("2017-10-01 00:10:00", 600, 16, "vc2"),
            philly_row("2017-10-01 00:00:00", 60.5, 1),
            philly_row("2017-10-01 00:00:00", 30, 4),  # same second as line 3: file order breaks the tie
        ],
    )
    rows, errors = read_philly(path)
    assert errors == []
    assert [r.line for r in rows] == [3, 4, 2]
    arrivals = list(philly_arrivals(rows))
    assert [a.submit_time for a in arrivals] == [0.0, 0.0, 600.0]
    assert [a.duration for a in arrivals] == [60.5, 30.0, 600.0]
    big = arrivals[2].job
    assert big.name == "philly-2" and big.spec.queue == "vc2"
    (task,) = big.spec.tasks
    assert (task.replicas, big.spec.min_available) == (16, 16)  # a gang of 16 one-GPU pods: spans two 8-GPU nodes
    assert task.template.spec.requests() == {GPU: 1000.0}
    assert [q.name for q in queues_of(rows)] == ["vc1", "vc2"]


def test_a_checkpoint_interval_annotates_every_job(tmp_path: Path) -> None:
    rows, _ = read_philly(philly_csv(tmp_path, [philly_row("2017-10-01 01:00:00", 60, 2)]))
    (plain,) = philly_arrivals(rows)
    (saved,) = philly_arrivals(rows, checkpoint=600)
    assert plain.job.metadata.annotations == {}
    assert saved.job.metadata.annotations == {"caldera.dev/checkpoint-interval": "600"}


def test_origin_and_rate_scale_shift_and_compress_arrivals(tmp_path: Path) -> None:
    path = philly_csv(tmp_path, [philly_row("2017-10-01 01:00:00", 60, 1), philly_row("2017-10-01 02:00:00", 60, 1)])
    rows, _ = read_philly(path)
    origin = rows[0].submit - 600
    assert [a.submit_time for a in philly_arrivals(rows, origin, 2.0)] == [300.0, 2100.0]


@pytest.mark.parametrize(
    ("row", "where", "rule"),
    [
        pytest.param("2017-10-01 00:00:00,60,1,60", "line 3", "expected 5 columns, found 4", id="missing-column"),
        pytest.param("yesterday,60,1,60,vc1", "line 3: timestamp", "is not YYYY-MM-DD HH:MM:SS", id="bad-timestamp"),
        pytest.param("2017-10-01 00:00:00,long,1,60,vc1", "line 3", "duration must be a number", id="bad-duration"),
        pytest.param("2017-10-01 00:00:00,60,1.5,60,vc1", "line 3", "num_gpus an integer", id="fractional-gpus"),
        pytest.param("2017-10-01 00:00:00,60,0,0,vc1", "line 3", "must be positive", id="zero-gpus"),
        pytest.param("2017-10-01 00:00:00,-5,1,-5,vc1", "line 3", "must be positive", id="negative-duration"),
        pytest.param("2017-10-01 00:00:00,60,1,60,", "line 3", "cluster set", id="no-cluster"),
    ],
)
def test_a_malformed_row_is_reported_with_its_line_and_skipped(tmp_path: Path, row: str, where: str, rule: str) -> None:
    good = philly_row("2017-10-01 00:00:00", 60, 1)
    path = philly_csv(tmp_path, [good, row, good])
    rows, errors = read_philly(path)
    assert [r.line for r in rows] == [2, 4]
    (error,) = errors
    assert error.path == where and rule in error.rule


def test_blank_lines_are_not_rows(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text(PHILLY_HEADER + philly_row("2017-10-01 00:00:00", 60, 1) + "\n\n\n")
    rows, errors = read_philly(path)
    assert (len(rows), errors) == (1, [])


def test_a_missing_file_or_wrong_header_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="cannot read the trace"):
        read_philly(tmp_path / "nope.csv")
    (tmp_path / "h.csv").write_text("a,b,c\n")
    with pytest.raises(ValidationError, match="line 1: expected the columns timestamp, duration"):
        read_philly(tmp_path / "h.csv")
