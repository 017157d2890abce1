"""`EmbeddedCluster.apply_later`, the REST server's way in: checked on the caller's thread, answered once durable.

The server's event loop awaits the future instead of a worker thread waiting for the control
loop's turn; what must not change with it: the answer comes only once the job is in the store,
a refused manifest is refused before anything is queued, and a name still held by a deleted
job's stopping pods is reported (the server then waits for it the `apply` way).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest

from caldera.core.errors import ValidationError
from caldera.system.api import AppliesLater, Conflict
from caldera.system.daemon import EmbeddedCluster

from .kit import job, running, sleeper, wait_phase


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with running(tmp_path / "caldera") as c:
        yield c


def test_the_answer_comes_once_the_job_is_in_the_store(cluster: EmbeddedCluster) -> None:
    assert isinstance(cluster, AppliesLater)
    stored_when_answered: list[bool] = []
    answered = threading.Event()

    def on_answer(fut: Future[dict[str, object]]) -> None:  # runs on the loop's thread as the answer is given
        stored_when_answered.append(cluster.store.get("Job", "default", "durable") is not None)
        answered.set()

    fut = cluster.apply_later(job("durable", ["true"]))
    fut.add_done_callback(on_answer)
    assert fut.result(timeout=60)["metadata"]["name"] == "durable"
    assert answered.wait(timeout=60)
    assert stored_when_answered == [True]
    wait_phase(cluster, "durable", "Completed")


def test_a_refused_manifest_is_refused_before_anything_is_queued(cluster: EmbeddedCluster) -> None:
    bad = job("bad", ["true"])
    bad["spec"]["tasks"][0]["replicas"] = -1
    with pytest.raises(ValidationError, match="replicas"):
        cluster.apply_later(bad)
    with pytest.raises(ValidationError, match="not found on PATH"):
        cluster.apply_later(job("nowhere", ["no-such-command-anywhere"]))
    assert cluster.list_jobs() == []
    assert cluster.store.list("Job") == []


def test_a_name_held_by_a_deleted_jobs_stopping_pods_is_reported_at_once(cluster: EmbeddedCluster) -> None:
    cluster.apply(job("again", sleeper(linger=5.0)))
    wait_phase(cluster, "again", "Running")
    cluster.delete_job("default", "again")  # its pod takes 5 s to go after SIGTERM
    with pytest.raises(Conflict, match="still stopping"):
        cluster.apply_later(job("again", ["true"])).result(timeout=60)
    cluster.apply(job("again", ["true"]))  # the waiting way: once the old pod is gone
    wait_phase(cluster, "again", "Completed")
