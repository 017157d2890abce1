"""Pod logs by time over HTTP: `timestamps` stamps each line, `sinceSeconds`/`sinceTime` keep the later ones."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from caldera.server.logtimes import LineTimes, rfc3339_nano
from caldera.testing.fake_cluster import FakeCluster
from caldera.utils.clock import SystemClock

from .helpers import job_manifest

LOG = "/api/v1/namespaces/default/pods/train-master-0/log"
T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def written(fake: FakeCluster, lines: list[tuple[str, float]]) -> Path:
    """A log of `lines`, each noted as written at its time, as the shim notes them (OFFSET SECONDS)."""
    fake.apply(job_manifest())
    path = fake.write_log("default", "train-master-0", "")
    offset = 0
    with path.open("a") as log, path.with_name("log.times").open("a") as times:
        for text, at in lines:
            times.write(f"{offset} {at:.6f}\n")
            log.write(text)
            offset += len(text.encode())
    return path


def test_timestamps_prefix_each_line_with_when_it_was_written(api: httpx.Client, fake: FakeCluster) -> None:
    written(fake, [("one\n", T0), ("two\nthree\n", T0 + 1.5), ("four", T0 + 2)])  # four: no newline yet
    r = api.get(LOG, params={"timestamps": "true"})
    assert r.status_code == 200
    assert r.text == (
        "2023-11-14T22:13:20.000000Z one\n"
        "2023-11-14T22:13:21.500000Z two\n"
        "2023-11-14T22:13:21.500000Z three\n"  # written in the same read as two
        "2023-11-14T22:13:22.000000Z four"
    )
    assert api.get(LOG, params={"timestamps": "true", "tailLines": 1}).text == "2023-11-14T22:13:22.000000Z four"


def test_since_time_and_since_seconds_keep_the_later_lines(api: httpx.Client, fake: FakeCluster) -> None:
    now = SystemClock().now()
    written(fake, [("old\n", now - 600), ("recent\n", now - 30), ("new\n", now - 1)])
    assert api.get(LOG, params={"sinceSeconds": 60}).text == "recent\nnew\n"
    assert api.get(LOG, params={"sinceTime": rfc3339_nano(now - 10)}).text == "new\n"
    assert api.get(LOG, params={"sinceSeconds": 60, "tailLines": 1}).text == "new\n"
    assert api.get(LOG, params={"sinceTime": rfc3339_nano(now + 60)}).text == ""


@pytest.mark.parametrize(
    ("params", "field"),
    [
        pytest.param({"sinceTime": "yesterday"}, "sinceTime", id="not-a-time"),
        pytest.param({"sinceTime": "2024-01-01T00:00:00Z", "sinceSeconds": 5}, "sinceTime", id="both"),
        pytest.param({"sinceSeconds": -1}, "query.sinceSeconds", id="negative"),
    ],
)
def test_bad_since_is_a_422(api: httpx.Client, fake: FakeCluster, params: dict[str, object], field: str) -> None:
    written(fake, [("x\n", T0)])
    r = api.get(LOG, params=params)
    assert r.status_code == 422 and field in r.text


def test_lines_older_than_the_notes_take_the_first_note(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("before notes\nnoted\n")
    (tmp_path / "log.times").write_text(f"13 {T0:.6f}\nnot a note\n")
    times = LineTimes(log)
    times.refresh()
    assert (times.at(0), times.at(13)) == (T0, T0)
    assert times.first_since(T0) == 13 and times.first_since(T0 + 1) is None
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", rfc3339_nano(T0))
