"""`python -m caldera.launcher` for real: launcher processes, a real etcd server, real worker processes.

The workers are `worker.py` (not torch, to stay fast). Each test uses its own job id on one etcd
server per module, and leaves no process behind (`Launchers.close` fails the test on a leak).
Times measured from a kill are printed (`pytest -s`) but never asserted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from caldera.launcher import rendezvous as rdzv
from caldera.launcher.server import find_etcd
from caldera.testing.etcd import ready_client, running_etcd
from caldera.testing.tcpproxy import TcpProxy
from caldera.testing.waiting import wait_until
from caldera.utils.clock import SystemClock

from .launchers import WORKER, Launchers, alive

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="no etcd binary (apt-get install etcd-server)")
CLOCK = SystemClock()


@pytest.fixture(scope="module")
def etcd_server(tmp_path_factory):
    with running_etcd(tmp_path_factory.mktemp("etcd")) as server:
        yield server


@pytest.fixture
def kv(etcd_server):
    client = ready_client(etcd_server.endpoint)
    yield client
    client.close()


@pytest.fixture
def launchers(etcd_server, tmp_path, request):
    work = tmp_path / "work"
    work.mkdir()
    harness = Launchers(etcd_server.endpoint, request.node.name.replace("[", "-").rstrip("]")[:60], work)
    yield harness
    leaks = harness.close()
    assert not leaks, f"left running: {leaks}"


def job_keys(kv, job):
    return [item.key for item in kv.get_prefix(rdzv.job_prefix(job))]


def test_three_launchers_form_world_3_complete_and_the_job_id_can_be_reused(launchers, kv):
    pods = ["pod-0", "pod-1", "pod-2"]
    first = [launchers.start(p, np="3") for p in pods]
    envs = launchers.wait_started(pods, 0)
    assert sorted(e["RANK"] for e in envs) == ["0", "1", "2"]
    assert {e["WORLD_SIZE"] for e in envs} == {"3"} and {e["TORCHELASTIC_RESTART_COUNT"] for e in envs} == {"0"}
    assert len({e["MASTER_PORT"] for e in envs}) == 1
    endpoints = envs[0]["PADDLE_TRAINER_ENDPOINTS"].split(",")
    assert len(set(endpoints)) == 3 and sorted(e["PADDLE_CURRENT_ENDPOINT"] for e in envs) == sorted(endpoints)
    assert envs[0]["MASTER_PORT"] not in {ep.rsplit(":", 1)[1] for ep in endpoints}
    launchers.release(0)
    assert [launcher.wait() for launcher in first] == [0, 0, 0]
    assert job_keys(kv, launchers.job) == []

    # the same job id again: a new run from round 0, with fresh ports
    (launchers.workdir / "exit").unlink()
    for record in launchers.workdir.glob("*.json"):
        record.unlink()
    second = [launchers.start(p, np="2") for p in pods[:2]]
    again = launchers.wait_started(pods[:2], 0)
    assert {e["WORLD_SIZE"] for e in again} == {"2"}
    launchers.release(0)
    assert [launcher.wait() for launcher in second] == [0, 0]
    assert job_keys(kv, launchers.job) == []


def test_kill_9_with_remove_pod_then_a_replacement_resumes_at_world_3_with_ranks_kept(launchers, kv):
    pods = ["pod-0", "pod-1", "pod-2"]
    started = {p: launchers.start(p, np="3", ttl=5) for p in pods}
    envs = dict(zip(pods, launchers.wait_started(pods, 0), strict=True))
    victim = next(p for p in pods if envs[p]["RANK"] == "1")
    survivors = [p for p in pods if p != victim]
    killed_at = CLOCK.now()
    started[victim].proc.kill()
    assert rdzv.remove_pod(kv, launchers.job, victim) == 1  # what the daemon does when it sees the pod die
    wait_until(lambda: all(started[p].said("member left") for p in survivors), timeout=10, what="member left")
    noticed = max(started[p].when("member left") for p in survivors) - killed_at
    # PDEATHSIG: the dead launcher's worker died with it; the survivors stopped theirs
    wait_until(lambda: not any(alive(int(e["pid"])) for e in envs.values()), timeout=10, what="round 0 workers gone")
    waiting = "waiting for 3 nodes (have 2)"  # logged once the workers are stopped: waited for, not asserted
    wait_until(lambda: all(started[p].said(waiting) for p in survivors), timeout=10, what="survivors waiting")

    replacement = launchers.start(victim, np="3", ttl=5)
    again = dict(zip(pods, launchers.wait_started(pods, 1), strict=True))
    assert {p: again[p]["RANK"] for p in pods} == {p: envs[p]["RANK"] for p in pods}
    assert {e["WORLD_SIZE"] for e in again.values()} == {"3"}
    print(f"\nkill -9 + remove_pod -> survivors saw 'member left' after {noticed:.2f}s")
    launchers.release(0)
    assert [started[p].wait() for p in survivors] + [replacement.wait()] == [0, 0, 0]


def test_kill_9_without_remove_pod_is_noticed_when_the_lease_expires(launchers, kv):
    pods = ["pod-0", "pod-1", "pod-2"]
    started = {p: launchers.start(p, np="2:3", ttl=2, elastic_timeout=1) for p in pods}
    envs = dict(zip(pods, launchers.wait_started(pods, 0), strict=True))
    killed_at = CLOCK.now()
    started["pod-2"].proc.kill()
    started["pod-2"].proc.wait()
    pods_registered = [n.record.pod for n in rdzv.read(kv, launchers.job).nodes]
    assert "pod-2" in pods_registered  # dead, yet registered: only its lease running out can tell the others
    survivors = ["pod-0", "pod-1"]
    again = launchers.wait_started(survivors, 1, timeout=20)
    assert {e["WORLD_SIZE"] for e in again} == {"2"}
    assert sorted(e["RANK"] for e in again) == ["0", "1"]
    noticed = max(started[p].when("member left") for p in survivors) - killed_at
    resumed = max(started[p].when("round=1 world=2") for p in survivors) - killed_at
    print(f"\nkill -9, TTL 2 s, elastic timeout 1 s -> member left after {noticed:.2f}s, world 2 after {resumed:.2f}s")
    wait_until(lambda: not alive(int(envs["pod-2"]["pid"])), timeout=10, what="the killed launcher's worker to die")
    launchers.release(0)
    assert [started[p].wait() for p in survivors] == [0, 0]


def test_unannounced_survivors_re_form_when_the_lease_expires_and_grow_again_when_one_joins(launchers, kv):
    """`--np 2:3`, no daemon, no --elastic-timeout: nobody said a third node is coming, so the
    survivors of a kill -9 go on at 2 as soon as the dead one's lease is gone, without waiting."""
    pods = ["pod-0", "pod-1", "pod-2"]
    started = {p: launchers.start(p, np="2:3", ttl=2, elastic_timeout=None) for p in pods}
    # the first two may form a round of 2 at once; the third joining makes one of 3 right after
    wait_until(lambda: launchers.latest_round(pods, world=3) is not None, timeout=30, what="a round of 3")
    n = launchers.latest_round(pods, world=3)
    assert n is not None
    envs = dict(zip(pods, launchers.wait_started(pods, n), strict=True))
    survivors = [p for p in pods if envs[p]["RANK"] != "2"]
    victim = next(p for p in pods if envs[p]["RANK"] == "2")
    killed_at = CLOCK.now()
    started[victim].proc.kill()
    started[victim].proc.wait()
    again = dict(zip(survivors, launchers.wait_started(survivors, n + 1, timeout=20), strict=True))
    assert {e["WORLD_SIZE"] for e in again.values()} == {"2"}
    assert {p: again[p]["RANK"] for p in survivors} == {p: envs[p]["RANK"] for p in survivors}
    assert not any(started[p].said("waiting for 3 nodes") for p in survivors)  # went on at once, no timeout
    resumed = max(started[p].when(f"round={n + 1} world=2") for p in survivors) - killed_at

    newcomer = launchers.start("pod-3", np="2:3", ttl=2, elastic_timeout=None)
    grown = dict(zip([*survivors, "pod-3"], launchers.wait_started([*survivors, "pod-3"], n + 2), strict=True))
    assert {e["WORLD_SIZE"] for e in grown.values()} == {"3"}
    assert grown["pod-3"]["RANK"] == "2" and all(grown[p]["RANK"] == envs[p]["RANK"] for p in survivors)
    print(f"\nkill -9, TTL 2 s, nothing announced -> world 2 after {resumed:.2f}s")
    launchers.release(0)
    assert [started[p].wait() for p in survivors] + [newcomer.wait()] == [0, 0, 0]


def test_worker_failures_are_counted_and_exhaustion_fails_every_launcher(launchers, kv):
    pods = ["pod-0", "pod-1"]
    started = [launchers.start(p, np="2", max_restarts=1) for p in pods]
    launchers.wait_started(pods, 0)
    launchers.release(3, pod="pod-0", round_=0)
    again = launchers.wait_started(pods, 1)
    assert {e["TORCHELASTIC_RESTART_COUNT"] for e in again} == {"1"}
    launchers.release(5, pod="pod-1", round_=1)
    assert [launcher.wait() for launcher in started] == [1, 1]
    assert launchers.started("pod-0", 2) is None
    assert all(launcher.said("job failed") for launcher in started)
    assert job_keys(kv, launchers.job) == []


def test_scale_by_set_target_3_to_2_to_3(launchers, kv):
    rdzv.set_target(kv, launchers.job, 3)
    pods = ["pod-0", "pod-1", "pod-2"]
    started = [launchers.start(p, np="2:4", elastic_timeout=60) for p in pods]
    envs = dict(zip(pods, launchers.wait_started(pods, 0), strict=True))
    assert {e["WORLD_SIZE"] for e in envs.values()} == {"3"}
    rdzv.set_target(kv, launchers.job, 2)
    kept = [p for p in pods if envs[p]["RANK"] in ("0", "1")]
    spare = next(p for p in pods if envs[p]["RANK"] == "2")
    smaller = dict(zip(kept, launchers.wait_started(kept, 1), strict=True))
    assert {p: smaller[p]["RANK"] for p in kept} == {p: envs[p]["RANK"] for p in kept}
    assert {e["WORLD_SIZE"] for e in smaller.values()} == {"2"}
    wait_until(lambda: not alive(int(envs[spare]["pid"])), timeout=10, what="the spare's worker to stop")
    assert launchers.started(spare, 1) is None
    rdzv.set_target(kv, launchers.job, 3)
    larger = dict(zip(pods, launchers.wait_started(pods, 2), strict=True))
    assert {p: larger[p]["RANK"] for p in pods} == {p: envs[p]["RANK"] for p in pods}
    launchers.release(0)
    assert [launcher.wait() for launcher in started] == [0, 0, 0]


def test_two_jobs_on_one_etcd_do_not_interfere(launchers, kv):
    a = [launchers.start(f"a-{i}", np="2", job=f"{launchers.job}-a") for i in range(2)]
    b = [launchers.start(f"b-{i}", np="2", job=f"{launchers.job}-b") for i in range(2)]
    envs_a = launchers.wait_started(["a-0", "a-1"], 0)
    envs_b = launchers.wait_started(["b-0", "b-1"], 0)
    assert {e["WORLD_SIZE"] for e in envs_a + envs_b} == {"2"}
    assert {e["TORCHELASTIC_RUN_ID"] for e in envs_a} == {f"{launchers.job}-a"}
    ports_a = set(envs_a[0]["PADDLE_TRAINER_ENDPOINTS"].split(",")) | {envs_a[0]["MASTER_PORT"]}
    ports_b = set(envs_b[0]["PADDLE_TRAINER_ENDPOINTS"].split(",")) | {envs_b[0]["MASTER_PORT"]}
    assert not ports_a & ports_b
    launchers.release(0, pod="a-0")
    launchers.release(0, pod="a-1")
    assert [launcher.wait() for launcher in a] == [0, 0]
    assert all(launcher.proc.poll() is None for launcher in b)  # job b is untouched
    assert launchers.started("b-0", 1) is None
    launchers.release(0)
    assert [launcher.wait() for launcher in b] == [0, 0]


def test_sigterm_stops_the_workers_deletes_the_key_and_exits_128_plus_15(launchers, kv):
    pods = ["pod-0", "pod-1"]
    started = {p: launchers.start(p, np="2", ttl=30) for p in pods}
    envs = dict(zip(pods, launchers.wait_started(pods, 0), strict=True))
    started["pod-0"].proc.send_signal(signal.SIGTERM)
    assert started["pod-0"].wait() == 128 + signal.SIGTERM
    assert not alive(int(envs["pod-0"]["pid"]))
    # its key went at once (TTL 30 s): the peer stopped its workers without waiting for the lease
    wait_until(lambda: started["pod-1"].said("member left"), timeout=5, what="the peer to see it leave")
    wait_until(lambda: not alive(int(envs["pod-1"]["pid"])), timeout=10, what="the peer's worker to stop")
    started["pod-1"].proc.send_signal(signal.SIGINT)
    assert started["pod-1"].wait() == 128 + signal.SIGINT


def test_a_cut_longer_than_the_ttl_stops_the_workers_and_the_launcher_registers_again(launchers, etcd_server):
    with TcpProxy(etcd_server.endpoint) as proxy:
        cut_off = launchers.start("pod-0", np="2", ttl=2, server=proxy.endpoint)
        direct = launchers.start("pod-1", np="2", ttl=2)
        envs = launchers.wait_started(["pod-0", "pod-1"], 0)
        proxy.cut()
        cut_at = CLOCK.now()
        wait_until(lambda: cut_off.said("stopping workers (lease lost)"), timeout=15, what="the stale launcher to stop")
        stale_after = cut_off.when("stopping workers (lease lost)") - cut_at
        # the line comes as the stop begins (SIGTERM, then the wait): its end is waited for, not asserted
        wait_until(lambda: not alive(int(envs[0]["pid"])), timeout=10, what="the stale launcher's worker to stop")
        wait_until(lambda: direct.said("member left"), timeout=15, what="the peer to see the lease expire")
        proxy.restore()
        again = launchers.wait_started(["pod-0", "pod-1"], 1, timeout=30)
        assert {e["WORLD_SIZE"] for e in again} == {"2"}
        assert len([line for line in cut_off.lines() if line.endswith(" registered")]) == 2
        print(f"\nconnection cut (TTL 2 s) -> workers stopped after {stale_after:.2f}s")
        launchers.release(0)
        assert [cut_off.wait(), direct.wait()] == [0, 0]


def test_caldera_launch_is_the_same_launcher(launchers, etcd_server, kv):
    argv = [sys.executable, "-m", "caldera.cli.main", "launch", "--elastic-server", etcd_server.endpoint]
    argv += ["--job-id", launchers.job, "--np", "1", "--", sys.executable, str(WORKER), str(launchers.workdir)]
    env = dict(os.environ, CALDERA_POD_NAME="cli")
    launchers.release(0)
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    record = launchers.started("cli", 0)
    assert record is not None and record["WORLD_SIZE"] == "1" and record["RANK"] == "0"
    assert "round=0 world=1 rank=0" in result.stderr and job_keys(kv, launchers.job) == []
