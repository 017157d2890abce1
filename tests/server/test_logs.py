"""Pod logs over HTTP: the whole file, its tail, and following it until the pod ends."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from caldera.server import create_app
from caldera.server.logstream import tail_offset
from caldera.testing.fake_cluster import FakeCluster

from .helpers import AUTH, HTTP_TIMEOUT, TOKEN, job_manifest, serve

LOG = "/api/v1/namespaces/default/pods/train-master-0/log"


@pytest.fixture
def job(fake: FakeCluster) -> FakeCluster:
    fake.apply(job_manifest())
    return fake


def test_the_whole_log(api: httpx.Client, job: FakeCluster) -> None:
    job.write_log("default", "train-master-0", "one\ntwo\nthree\n")
    r = api.get(LOG)
    assert r.status_code == 200 and r.text == "one\ntwo\nthree\n"
    assert r.headers["content-type"].startswith("text/plain")


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        pytest.param(0, "", id="none"),
        pytest.param(2, "two\nthree\n", id="two"),
        pytest.param(10, "one\ntwo\nthree\n", id="more-than-there-are"),
        pytest.param(-1, "one\ntwo\nthree\n", id="all"),
    ],
)
def test_tail_lines(api: httpx.Client, job: FakeCluster, tail: int, expected: str) -> None:
    job.write_log("default", "train-master-0", "one\ntwo\nthree\n")
    assert api.get(LOG, params={"tailLines": tail}).text == expected


ATTEMPTS = (
    "=== attempt 0 started 2026-01-01T00:00:00+00:00 ===\nfirst run\nfailed\n"
    "=== attempt 1 started 2026-01-01T00:00:10+00:00 ===\nsecond run\n"
    "=== attempt 2 started 2026-01-01T00:00:30+00:00 ===\nthird run\n"
)


def test_previous_is_the_attempt_before_the_last(api: httpx.Client, job: FakeCluster) -> None:
    job.write_log("default", "train-master-0", ATTEMPTS)
    r = api.get(LOG, params={"previous": "true"})
    assert r.status_code == 200
    assert r.text == "=== attempt 1 started 2026-01-01T00:00:10+00:00 ===\nsecond run\n"
    assert api.get(LOG, params={"previous": "true", "tailLines": 1}).text == "second run\n"
    assert api.get(LOG).text == ATTEMPTS  # without it: every attempt


def test_previous_of_a_pod_that_ran_once_is_404(api: httpx.Client, job: FakeCluster) -> None:
    job.write_log("default", "train-master-0", "=== attempt 0 started 2026-01-01T00:00:00+00:00 ===\nonly\n")
    r = api.get(LOG, params={"previous": "true"})
    assert r.status_code == 404
    assert r.json()["error"] == "pod default/train-master-0 has no previous attempt (it has run 1 time)"


def test_a_line_that_only_looks_like_a_header_does_not_split_the_log(api: httpx.Client, job: FakeCluster) -> None:
    job.write_log("default", "train-master-0", ATTEMPTS.replace("second run", "=== attempt 9 is a lie"))
    assert "=== attempt 9 is a lie" in api.get(LOG, params={"previous": "true"}).text


def test_a_log_not_written_yet_is_empty(api: httpx.Client, job: FakeCluster) -> None:
    assert api.get(LOG).text == ""


def test_an_unknown_pod_is_404(api: httpx.Client, job: FakeCluster) -> None:
    r = api.get("/api/v1/namespaces/default/pods/nope/log")
    assert r.status_code == 404 and r.json()["error"] == "pod default/nope not found"


def test_follow_streams_appends_until_the_pod_ends_then_drains(api: httpx.Client, job: FakeCluster) -> None:
    job.set_pod("default", "train-master-0", phase="Running")
    job.write_log("default", "train-master-0", "epoch 1\n")
    with api.stream("GET", LOG, params={"follow": "true"}) as r:
        chunks = r.iter_text()
        assert next(chunks) == "epoch 1\n"
        job.write_log("default", "train-master-0", "epoch 2\n")
        assert next(chunks) == "epoch 2\n"  # blocks until the server has seen it appended
        job.write_log("default", "train-master-0", "done\n")
        job.set_pod("default", "train-master-0", phase="Succeeded", exit_code=0)
        rest = "".join(chunks)  # ends by itself: the pod finished and the file was drained
    assert rest == "done\n"


def test_follow_ends_when_the_job_is_deleted(api: httpx.Client, job: FakeCluster) -> None:
    job.write_log("default", "train-master-0", "hello\n")
    with api.stream("GET", LOG, params={"follow": "true"}) as r:
        chunks = r.iter_text()
        assert next(chunks) == "hello\n"
        job.delete_job("default", "train")
        assert "".join(chunks) == ""


def test_a_follower_that_leaves_stops_its_stream(tmp_path: Path) -> None:
    """The server stops (its thread joins) only if the abandoned stream was cancelled."""
    fake = FakeCluster(tmp_path)
    fake.apply(job_manifest())
    fake.set_pod("default", "train-master-0", phase="Running")
    fake.write_log("default", "train-master-0", "step 1\n")
    with (
        serve(create_app(fake, TOKEN, log_poll=0.01)) as live,
        httpx.Client(base_url=live.url, headers=AUTH, timeout=HTTP_TIMEOUT) as api,
    ):
        with api.stream("GET", LOG, params={"follow": "true"}) as r:
            assert next(r.iter_text()) == "step 1\n"
        # the pod still runs; the client is gone
        assert api.get("/info").status_code == 200


@pytest.mark.parametrize(
    ("content", "lines", "expected"),
    [
        pytest.param(b"", 3, b"", id="empty"),
        pytest.param(b"a\nb\nc", 1, b"c", id="no-final-newline"),
        pytest.param(b"a\nb\nc\n", 1, b"c\n", id="final-newline"),
        pytest.param(b"a\n\nb\n", 2, b"\nb\n", id="blank-line-counts"),
        pytest.param(b"x" * 20000 + b"\n" + b"y" * 20000 + b"\n", 1, b"y" * 20000 + b"\n", id="long-lines"),
        pytest.param(b"".join(b"%d\n" % i for i in range(5000)), 3, b"4997\n4998\n4999\n", id="many-blocks"),
    ],
)
def test_tail_offset(tmp_path: Path, content: bytes, lines: int, expected: bytes) -> None:
    path = tmp_path / "log"
    path.write_bytes(content)
    assert content[tail_offset(path, lines) :] == expected


def test_tail_offset_of_a_missing_file(tmp_path: Path) -> None:
    assert tail_offset(tmp_path / "none", 5) == 0
