"""The rendezvous keys over MemoryKV: reading a job, compare-and-swap proposals, the daemon's calls,
completion and the reuse of a finished job id."""

from __future__ import annotations

import json

import pytest

from caldera.launcher import rendezvous as rdzv
from caldera.launcher.memkv import MemoryKV
from caldera.launcher.records import Ack, Done, NodeRecord, Round
from caldera.utils.clock import ManualClock

JOB = "job-a"
KEYS = rdzv.Keys(JOB)


@pytest.fixture
def clock():
    return ManualClock(1000.0)


@pytest.fixture
def kv(clock):
    store = MemoryKV(clock)
    yield store
    store.close()


def join(kv: MemoryKV, node_id: str, *, pod: str = "", ttl: int = 10, host: str = "127.0.0.1") -> int:
    lease = kv.grant(ttl)
    rdzv.register(kv, JOB, node_id, NodeRecord(host, 1, pod, 123), lease)
    return lease


def test_keys_live_under_the_job_prefix():
    assert KEYS.node("n1") == "/caldera/elastic/job-a/nodes/n1"
    assert KEYS.ready(3, "n1") == "/caldera/elastic/job-a/rounds/3/ready/n1"
    assert KEYS.failed(3, "n1") == "/caldera/elastic/job-a/rounds/3/failed/n1"
    with pytest.raises(ValueError):
        rdzv.job_prefix("a/b")


def test_view_lists_nodes_in_join_order_and_the_current_rounds_keys(kv):
    leases = {n: join(kv, n) for n in ("zz", "aa", "mm")}
    rdzv.set_target(kv, JOB, 2)
    view = rdzv.read(kv, JOB)
    assert view.alive() == ["zz", "aa", "mm"]
    assert view.np == 2 and view.round is None
    assert rdzv.propose(kv, JOB, view, Round(0, ("zz", "aa")))
    rdzv.acknowledge(kv, JOB, 0, "zz", Ack("127.0.0.1", (1,), 2), leases["zz"])
    rdzv.report_failure(kv, JOB, 0, "aa", [3], leases["aa"])
    kv.put(KEYS.ready(9, "mm"), "not json")
    view = rdzv.read(kv, JOB)
    assert view.round == Round(0, ("zz", "aa"))
    assert view.acks == {"zz": Ack("127.0.0.1", (1,), 2)}
    assert view.failed == {"aa"}


def test_malformed_values_read_as_absent(kv):
    kv.put(KEYS.np, "many")
    kv.put(KEYS.node("x"), "{}")
    kv.put(KEYS.round, '{"round": -1}')
    view = rdzv.read(kv, JOB)
    assert view.np is None and view.nodes == [] and view.round is None
    assert view.round_revision > 0  # still the revision a proposal must replace


def test_only_one_of_two_concurrent_proposals_wins(kv):
    for n in ("a", "b", "c"):
        join(kv, n)
    seen_by_a = rdzv.read(kv, JOB)
    seen_by_b = rdzv.read(kv, JOB)
    assert rdzv.propose(kv, JOB, seen_by_a, Round(0, ("a", "b", "c")))
    assert not rdzv.propose(kv, JOB, seen_by_b, Round(0, ("a", "b", "c")))
    # the loser re-reads and proposes from the winner's round, never reusing its number
    fresh = rdzv.read(kv, JOB)
    assert not rdzv.propose(kv, JOB, seen_by_b, Round(1, ("a", "b", "c"), 1))
    assert rdzv.propose(kv, JOB, fresh, Round(1, ("a", "b", "c"), 1))
    assert rdzv.read(kv, JOB).round == Round(1, ("a", "b", "c"), 1)


def test_the_winner_deletes_older_rounds_keys(kv):
    lease = join(kv, "a")
    assert rdzv.propose(kv, JOB, rdzv.read(kv, JOB), Round(0, ("a",)))
    rdzv.acknowledge(kv, JOB, 0, "a", Ack("h", (1,), 2), lease)
    assert rdzv.propose(kv, JOB, rdzv.read(kv, JOB), Round(1, ("a",)))
    rdzv.acknowledge(kv, JOB, 1, "a", Ack("h", (1,), 2), lease)
    assert rdzv.propose(kv, JOB, rdzv.read(kv, JOB), Round(2, ("a",)))
    assert [k.key for k in kv.get_prefix(KEYS.rounds)] == []


def test_per_node_keys_vanish_with_the_lease(kv, clock):
    lease = join(kv, "a", ttl=2)
    rdzv.acknowledge(kv, JOB, 0, "a", Ack("h", (1,), 2), lease)
    clock.advance(2.5)
    kv.expire()
    assert kv.get_prefix(KEYS.prefix) == []


def test_set_target_writes_np(kv):
    rdzv.set_target(kv, JOB, 3)
    assert json.loads(kv.get(KEYS.np).value) == 3
    with pytest.raises(ValueError):
        rdzv.set_target(kv, JOB, 0)


def test_remove_pod_revokes_only_that_pods_nodes(kv):
    lease = join(kv, "a", pod="job-worker-0")
    join(kv, "b", pod="job-worker-1")
    rdzv.acknowledge(kv, JOB, 0, "a", Ack("h", (1,), 2), lease)
    kv.put(KEYS.node("c"), NodeRecord("h", 1, "job-worker-0", 1).to_json())  # no lease: deleted directly
    assert rdzv.remove_pod(kv, JOB, "job-worker-0") == 2
    assert rdzv.read(kv, JOB).alive() == ["b"]
    assert kv.get(KEYS.ready(0, "a")) is None
    assert rdzv.remove_pod(kv, JOB, "nobody") == 0
    assert rdzv.remove_pod(kv, JOB, "") == 0


def test_clean_deletes_the_job_and_nothing_else(kv):
    join(kv, "a")
    rdzv.set_target(kv, JOB, 2)
    kv.put("/caldera/elastic/job-ab/np", "1")
    assert rdzv.clean(kv, JOB) == 2
    assert kv.get("/caldera/elastic/job-ab/np") is not None


def test_done_is_written_once(kv):
    assert rdzv.finish(kv, JOB, Done(3, "succeeded"))
    assert not rdzv.finish(kv, JOB, Done(4, "failed"))
    assert rdzv.read(kv, JOB).done == Done(3, "succeeded")


def test_the_last_node_to_leave_a_finished_job_deletes_its_prefix(kv):
    a, b = join(kv, "a"), join(kv, "b")
    rdzv.set_target(kv, JOB, 2)
    rdzv.finish(kv, JOB, Done(0, "succeeded"))
    assert not rdzv.leave(kv, JOB, a, last_deletes_job=True)
    assert kv.get(KEYS.done) is not None
    assert rdzv.leave(kv, JOB, b, last_deletes_job=True)
    assert kv.get_prefix(KEYS.prefix) == []


def test_leaving_on_a_signal_keeps_the_jobs_keys(kv):
    a = join(kv, "a")
    rdzv.set_target(kv, JOB, 2)
    assert not rdzv.leave(kv, JOB, a, last_deletes_job=False)
    assert kv.get(KEYS.np) is not None and kv.get(KEYS.node("a")) is None


def test_clearing_a_finished_run_keeps_an_np_written_after_it(kv):
    rdzv.set_target(kv, JOB, 2)
    rdzv.propose(kv, JOB, rdzv.read(kv, JOB), Round(0, ("x",)))
    rdzv.finish(kv, JOB, Done(0, "succeeded"))
    view = rdzv.read(kv, JOB)
    assert rdzv.finished_run(view)
    rdzv.clear_finished(kv, JOB, view)
    assert kv.get_prefix(KEYS.prefix) == []  # np predates done: the old run's, deleted

    rdzv.finish(kv, JOB, Done(5, "failed"))
    rdzv.set_target(kv, JOB, 4)  # `caldera scale` for the new run, after the old one finished
    kv.put(KEYS.ready(5, "x"), "{}")
    view = rdzv.read(kv, JOB)
    rdzv.clear_finished(kv, JOB, view)
    assert [k.key for k in kv.get_prefix(KEYS.prefix)] == [KEYS.np]
    assert not rdzv.finished_run(rdzv.read(kv, JOB))


def test_a_malformed_done_still_counts_as_a_finished_run(kv):
    kv.put(KEYS.done, "garbage")
    assert rdzv.finished_run(rdzv.read(kv, JOB))
