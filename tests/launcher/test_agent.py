"""The launcher's agent over MemoryKV and a ManualClock, with real worker processes.

Several agents share one store, as several pods share one etcd; the test drives them step by
step (`agents.Agents.pump`), so which one proposes first is decided by the order they act.
"""

from __future__ import annotations

import os

import pytest

from caldera.launcher import rendezvous as rdzv
from caldera.launcher.memkv import MemoryKV
from caldera.launcher.records import Done, NodeRecord, Round
from caldera.testing.waiting import wait_until
from caldera.utils.clock import ManualClock

from .agents import Agents


@pytest.fixture
def agents(tmp_path):
    clock = ManualClock(1_000_000.0)
    kv = MemoryKV(clock)
    work = tmp_path / "work"
    work.mkdir()
    harness = Agents(kv, clock, work)
    yield harness
    (work / "exit").write_text("0")
    harness.close()
    kv.close()


def pids_alive(pids):
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        alive.append(pid)
    return alive


def test_three_nodes_form_one_world_and_finish(agents):
    nodes = [agents.add(f"pod-{i}") for i in range(3)]
    agents.pump(lambda: all(agents.started(f"pod-{i}", 0) for i in range(3)), "three workers in round 0")
    envs = [agents.started(f"pod-{i}", 0) for i in range(3)]
    assert [e["RANK"] for e in envs] == ["0", "1", "2"]  # join order: the order they registered
    assert {e["WORLD_SIZE"] for e in envs} == {"3"}
    assert len({e["MASTER_PORT"] for e in envs}) == 1
    endpoints = envs[0]["PADDLE_TRAINER_ENDPOINTS"].split(",")
    assert len(set(endpoints)) == 3 and [e["PADDLE_CURRENT_ENDPOINT"] for e in envs] == endpoints
    proposals = [line for n in nodes for line in n.lines() if line.endswith(" proposed")]
    assert len(proposals) == 1  # one proposal won; the others adopted it

    agents.release(0)
    agents.pump(lambda: all(n.code is not None for n in nodes), "every launcher to exit")
    assert [n.code for n in nodes] == [0, 0, 0]
    assert agents.kv.get_prefix(rdzv.job_prefix(agents.job)) == []  # the last one deleted the prefix


def test_worker_failures_restart_the_round_until_the_budget_is_used(agents):
    nodes = [agents.add(f"pod-{i}", max_restarts=1) for i in range(3)]
    agents.pump(lambda: all(agents.started(f"pod-{i}", 0) for i in range(3)), "round 0")
    agents.release(3, pod="pod-1", round_=0)
    agents.pump(lambda: all(agents.started(f"pod-{i}", 1) for i in range(3)), "round 1 after a failure")
    assert agents.view().round == Round(1, agents.view().round.members, 1)
    assert agents.started("pod-0", 1)["TORCHELASTIC_RESTART_COUNT"] == "1"
    assert [agents.started(f"pod-{i}", 1)["RANK"] for i in range(3)] == ["0", "1", "2"]  # ranks kept

    agents.release(4, pod="pod-2", round_=1)  # a second failure in a row: budget (1 restart) used up
    agents.pump(lambda: all(n.code is not None for n in nodes), "every launcher to exit")
    assert [n.code for n in nodes] == [1, 1, 1]
    assert agents.started("pod-0", 2) is None  # the exhausted round never ran
    assert agents.kv.get_prefix(rdzv.job_prefix(agents.job)) == []
    assert any("restart budget used up" in line for n in nodes for line in n.lines())


def test_a_spare_exits_0_when_the_job_is_done(agents):
    nodes = [agents.add(f"pod-{i}") for i in range(4)]
    agents.pump(lambda: all(agents.started(f"pod-{i}", 0) for i in range(3)), "round 0")
    agents.pump(lambda: nodes[3].said("spare in round 0"), "the fourth node to be a spare")
    assert agents.started("pod-3", 0) is None
    agents.release(0)
    agents.pump(lambda: all(n.code is not None for n in nodes), "every launcher to exit")
    assert [n.code for n in nodes] == [0, 0, 0, 0]


def test_fault_tolerance_a_dropped_node_is_replaced_and_survivors_keep_their_ranks(agents):
    nodes = [agents.add(f"pod-{i}") for i in range(3)]
    agents.pump(lambda: all(agents.started(f"pod-{i}", 0) for i in range(3)), "round 0")
    first = agents.started("pod-0", 0)["pid"], agents.started("pod-2", 0)["pid"]
    # the daemon saw pod-1 die; here its launcher keeps running, so it comes back as a newcomer
    assert rdzv.remove_pod(agents.kv, agents.job, "pod-1") == 1
    agents.pump(lambda: all(agents.started(f"pod-{i}", 1) for i in range(3)), "round 1")
    assert nodes[0].said("member left") or nodes[2].said("member left")
    assert not pids_alive(first)  # the old workers were stopped before the new round
    ranks = {f"pod-{i}": agents.started(f"pod-{i}", 1)["RANK"] for i in range(3)}
    assert ranks == {"pod-0": "0", "pod-1": "1", "pod-2": "2"}  # the newcomer filled the hole
    assert nodes[1].said("registered")


def test_elastic_a_newcomer_waits_for_the_settle_time(agents):
    nodes = [agents.add(f"pod-{i}", np=(2, 4), elastic_timeout=30.0) for i in range(3)]
    agents.pump(lambda: all(n.said("waiting for 4 nodes (have 3)") for n in nodes), "three waiting for four")
    agents.advance(29.0)
    assert agents.view().round is None
    agents.advance(2.0)
    agents.pump(lambda: all(agents.started(f"pod-{i}", 0) for i in range(3)), "round 0 of three after 30 s")
    assert agents.started("pod-0", 0)["WORLD_SIZE"] == "3"


def test_scale_in_and_out_through_np(agents):
    rdzv.set_target(agents.kv, agents.job, 3)
    nodes = [agents.add(f"pod-{i}", np=(2, 4)) for i in range(3)]
    agents.pump(lambda: all(agents.started(f"pod-{i}", 0) for i in range(3)), "round 0 of three")
    rdzv.set_target(agents.kv, agents.job, 2)
    agents.pump(lambda: agents.started("pod-0", 1) and agents.started("pod-1", 1), "round 1 of two")
    assert agents.started("pod-0", 1)["WORLD_SIZE"] == "2"
    agents.pump(lambda: nodes[2].said("spare in round 1"), "pod-2 to be a spare")
    rdzv.set_target(agents.kv, agents.job, 3)
    agents.pump(lambda: all(agents.started(f"pod-{i}", 2) for i in range(3)), "round 2 of three")
    assert [agents.started(f"pod-{i}", 2)["RANK"] for i in range(3)] == ["0", "1", "2"]


def test_a_lost_connection_stops_the_workers_and_the_node_registers_again(agents):
    nodes = [agents.add(f"pod-{i}", np=(2, 2), ttl=5) for i in range(2)]
    agents.pump(lambda: all(agents.started(f"pod-{i}", 0) for i in range(2)), "round 0")
    pids = [agents.started(f"pod-{i}", 0)["pid"] for i in range(2)]
    agents.kv.set_reachable(False)
    for _ in range(6):  # 6 s of virtual time without a successful refresh (TTL 5)
        agents.clock.advance(1.0)
        for node in nodes:
            node.agent.keepalive.beat()
    agents.pump(lambda: not pids_alive(pids), "workers stopped while the lease is presumed lost")
    assert all(n.said("stopping workers (lease lost)") for n in nodes)
    agents.kv.set_reachable(True)
    agents.advance(3.0)  # the agents retry on their clock's backoff
    agents.pump(lambda: all(agents.started(f"pod-{i}", 1) for i in range(2)), "round 1 after re-registering")
    assert all(len([line for line in n.lines() if line.endswith(" registered")]) == 2 for n in nodes)


def test_a_reused_job_id_waits_for_the_old_run_then_starts_from_round_0(agents):
    old = agents.kv.grant(5)  # a launcher of the finished run that crashed: its key lives until its TTL
    rdzv.register(agents.kv, agents.job, "old", NodeRecord("127.0.0.1", 1, "old", 1), old)
    agents.kv.put(rdzv.Keys(agents.job).round, Round(7, ("old",)).to_json())
    rdzv.finish(agents.kv, agents.job, Done(7, "succeeded"))
    nodes = [agents.add(f"pod-{i}", np=(2, 2)) for i in range(2)]
    agents.pump(lambda: all(n.said("launchers of the finished run to leave") for n in nodes), "waiting")
    agents.advance(6.0)  # the crashed launcher's lease runs out
    agents.pump(lambda: all(agents.started(f"pod-{i}", 0) for i in range(2)), "round 0 of the new run")
    assert agents.started("pod-0", 0)["TORCHELASTIC_RESTART_COUNT"] == "0"


def test_a_reused_job_id_still_in_use_is_refused(agents):
    live = agents.kv.grant(5)
    rdzv.register(agents.kv, agents.job, "old", NodeRecord("127.0.0.1", 1, "old", 1), live)
    rdzv.finish(agents.kv, agents.job, Done(0, "succeeded"))
    node = agents.add("pod-0", np=(1, 1), elastic_timeout=10.0, ttl=2)
    agents.pump(lambda: node.said("launchers of the finished run to leave"), "waiting")
    for _ in range(12):
        agents.clock.advance(1.0)
        agents.kv.refresh(live)  # the old launcher is alive and well
        agents.pump_once()
    agents.pump(lambda: node.code is not None, "the launcher to give up")
    assert node.code == 1 and node.said("wait for them to exit or use another job id")


def test_workers_that_all_exited_0_while_the_store_was_away_complete_the_job_not_a_new_round(agents):
    """The lease is presumed lost (etcd out of reach) and, before that is handled, the workers all end
    with 0: the round is done, so the job succeeds once the store is back; no round runs it again."""
    nodes = [agents.add(f"pod-{i}", np=(2, 2), ttl=5) for i in range(2)]
    agents.pump(lambda: all(agents.started(f"pod-{i}", 0) for i in range(2)), "round 0")
    pids = [agents.started(f"pod-{i}", 0)["pid"] for i in range(2)]
    agents.kv.set_reachable(False)
    for _ in range(6):  # the lease events are queued first: 6 s without a refresh (TTL 5)
        agents.clock.advance(1.0)
        for node in nodes:
            node.agent.keepalive.beat()
    agents.release(0)  # then the workers end well; their exits are queued behind
    wait_until(lambda: not pids_alive(pids), timeout=20, what="the workers to exit")
    agents.pump(lambda: all(not n.agent.registered for n in nodes), "the lease presumed lost")
    agents.kv.set_reachable(True)
    agents.advance(3.0)
    agents.pump(lambda: all(n.code is not None for n in nodes), "every launcher to exit")
    assert [n.code for n in nodes] == [0, 0]
    assert all(n.said("workers succeeded") for n in nodes)
    assert agents.started("pod-0", 1) is None and agents.started("pod-1", 1) is None  # not run again
