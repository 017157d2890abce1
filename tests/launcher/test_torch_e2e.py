"""End to end with real torch (gloo, CPU): the launcher's environment is enough for
`init_process_group`, and a hot restart after a node loss re-forms the group with a fresh master."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from caldera.launcher import rendezvous as rdzv
from caldera.launcher.server import find_etcd
from caldera.testing.etcd import ready_client, running_etcd
from caldera.testing.waiting import wait_until

from .launchers import alive

pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(find_etcd() is None, reason="no etcd binary (apt-get install etcd-server)")
WORKER = Path(__file__).with_name("torch_worker.py")


def start(endpoint: str, pod: str, work: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "caldera.launcher", "--elastic-server", endpoint, "--job-id", "torch-e2e"]
    argv += ["--np", "2", "--ttl", "3", "--", sys.executable, str(WORKER), str(work)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CALDERA_ELASTIC", "PADDLE_ELASTIC"))}
    env["CALDERA_POD_NAME"] = pod
    with (work / f"{pod}.log").open("ab") as log:
        return subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env)


def result(work: Path, pod: str, round_: int) -> dict[str, float] | None:
    path = work / f"{pod}-r{round_}.json"
    return json.loads(path.read_text()) if path.exists() else None


def test_gloo_all_reduce_then_a_hot_restart_after_a_node_loss(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    procs: list[subprocess.Popen[bytes]] = []
    with running_etcd(tmp_path / "etcd") as server:
        kv = ready_client(server.endpoint)
        try:
            procs += [start(server.endpoint, "pod-a", work), start(server.endpoint, "pod-b", work)]
            wait_until(lambda: result(work, "pod-a", 0) and result(work, "pod-b", 0), 90, "all-reduce in round 0")
            assert {result(work, p, 0)["sum"] for p in ("pod-a", "pod-b")} == {3.0}
            victim = result(work, "pod-b", 0)
            procs[1].kill()  # the node is lost; its worker dies with it (PDEATHSIG)
            rdzv.remove_pod(kv, "torch-e2e", "pod-b")
            wait_until(lambda: not alive(int(victim["pid"])), 10, "the lost node's worker to die")
            procs.append(start(server.endpoint, "pod-b", work))  # the replacement pod
            wait_until(lambda: result(work, "pod-a", 1) and result(work, "pod-b", 1), 90, "all-reduce in round 1")
            assert {result(work, p, 1)["sum"] for p in ("pod-a", "pod-b")} == {3.0}
            # The survivor has rank 0 whichever rank it had: it kept it, or the lost node had it and a newcomer never
            # takes rank 0 while a survivor is in the round (rank 0 hosts the store; rounds.py)
            assert result(work, "pod-a", 1)["rank"] == 0
            (work / "exit").write_text("0")
            wait_until(lambda: procs[0].poll() is not None and procs[2].poll() is not None, 60, "launchers to exit")
            assert (procs[0].returncode, procs[2].returncode) == (0, 0)
            assert kv.get_prefix(rdzv.job_prefix("torch-e2e")) == []
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
            kv.close()
