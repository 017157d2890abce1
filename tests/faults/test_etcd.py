"""The daemon's etcd killed (-9) or frozen (SIGSTOP, then SIGCONT) while an elastic job trains.

A real daemon (`caldera up`) with the etcd it runs, an elastic PyTorch job of 2 pods
(`caldera submit pytorch --elastic --workers 2`: a launcher per pod, registered in etcd under a
lease, training examples/elastic-ddp on gloo with a checkpoint every epoch). Once an epoch is
saved, at a moment the seed picks, etcd is killed (the daemon starts it again on the same ports
and data) or stopped for a time the seed picks (1 to 12 s: shorter and longer than the
launchers' 5 s lease). Then:

- the job completes (training went on, or recovered once etcd was back) and reports its accuracy
  (a node whose workers all ended well while etcd was away completes, it does not run them again);
- in every round the ranks are distinct and the world is the job's 2: no duplicate rank, no
  worker that believes it is alone;
- a round started after the fault resumed from a checkpoint, not from the first epoch;
- once the job is done no pod's process is left (no orphaned worker), and after `caldera down`
  nothing of the trial is.

How long after etcd was back training went on (the first epoch line after that) is printed,
never asserted.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from caldera.client import connect, read_daemon
from caldera.launcher.server import find_etcd
from caldera.testing.processes import processes_of
from caldera.testing.waiting import wait_until
from caldera.utils.clock import SystemClock

from .kit import Daemon, bring_down

pytestmark = [
    pytest.mark.skipif(find_etcd() is None, reason="no etcd binary (make installs Debian's etcd-server)"),
    pytest.mark.trials(0.1),  # a training job per trial: a tenth of the kill -9 trials' count
]

TRAIN = Path(__file__).resolve().parents[2] / "examples" / "elastic-ddp" / "train.py"
EPOCHS = 6
START = re.compile(r"^start world=(\d+) rank=(\d+) restart=(\d+) resume_epoch=(\d+)", re.MULTILINE)
EPOCH = re.compile(r"^epoch=(\d+) world=(\d+) rank=(\d+) restart=(\d+) loss=\S+ time=(\S+)", re.MULTILINE)
ACCURACY = re.compile(r"^test accuracy (\d\.\d+)$", re.MULTILINE)
CLOCK = SystemClock()


def etcd_pid(home: Path) -> int:
    """The pid in the daemon's etcd/server.json (0 while it is missing: written whole once etcd is healthy)."""
    try:
        return int(json.loads((home / "etcd" / "server.json").read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return 0


def all_logs(home: Path) -> str:
    """Every pod's log, every attempt (a pod's directory keeps them)."""
    return "\n".join(
        (d / "log").read_text(errors="replace")
        for d in sorted((home / "pods" / "default").glob("el-*"))
        if (d / "log").exists()
    )


def epochs(home: Path) -> list[tuple[int, int, int, float]]:
    """(epoch, world, round, time) of rank 0's epoch lines: an epoch saved (rank 0 logs it after the save)."""
    return [(int(e), int(w), int(n), float(t)) for e, w, rank, n, t in EPOCH.findall(all_logs(home)) if rank == "0"]


@pytest.mark.parametrize("fault", ["kill9", "sigstop"])
def test_an_etcd_fault_while_an_elastic_job_trains(tmp_path: Path, seed: int, fault: str) -> None:
    rng = random.Random(seed)
    daemon = Daemon(tmp_path / "home")
    home = daemon.home
    daemon.up("--nodes", "1", "--cpus-per-node", "2", "--memory-per-node", "4Gi")
    left: list[str] = []
    try:
        command = ["python", str(TRAIN), "--epochs", str(EPOCHS), "--seed", "7", "--checkpoint", str(tmp_path / "ckpt")]
        r = daemon.run("submit", "pytorch", "--name", "el", "--elastic", "--workers", "2", "--cpu", "300m", "--",
                       *command, "--step-delay", "0.03")  # fmt: skip
        assert r.returncode == 0, r.stderr
        after = rng.randint(1, 2)
        wait_until(lambda: any(e >= after for e, *_ in epochs(home)), timeout=300, what=f"epoch {after} saved",
                   interval=0.1)  # fmt: skip
        threading.Event().wait(rng.uniform(0.0, 1.5))  # the fault lands mid-epoch, at a moment the seed picks

        pid = etcd_pid(home)
        assert pid, "the daemon runs no etcd"
        if fault == "kill9":
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: etcd_pid(home) not in (0, pid), timeout=60, what="etcd started again by the daemon")
            held = 0.0
        else:
            held = rng.uniform(1.0, 12.0)
            os.kill(pid, signal.SIGSTOP)
            try:
                threading.Event().wait(held)  # the fault itself lasts this long: nothing is waited for
            finally:
                os.kill(pid, signal.SIGCONT)
        back = CLOCK.now()

        with connect(home, timeout=60) as api:

            def completed() -> bool:
                job = api.get_job("default", "el")
                assert job["phase"] not in ("Failed", "Aborted", "Terminated"), f"seed {seed}: {job}{daemon.log()}"
                return job["phase"] == "Completed"

            wait_until(completed, timeout=400, what="the job to complete after the fault", interval=0.2)
            job = api.get_job("default", "el")
        text = all_logs(home)
        check_rounds(text, seed)
        # One evaluation, or the same one again: a round cut while its workers were past their last
        # epoch (tearing down) runs again from the last checkpoint, which trains no more.
        accuracies = ACCURACY.findall(text)
        assert len(set(accuracies)) == 1, f"seed {seed}: accuracies {accuracies}:\n{text[-3000:]}"
        trainers_gone(daemon)
        resumed = [t - back for *_, t in epochs(home) if t > back]
        rounds = max(int(n) for _, _, n, _ in START.findall(text))
        print(
            f"seed {seed}: etcd {fault}{f' {held:.1f}s' if held else ''} after epoch {after}; "
            f"{rounds} new round(s), retries {job.get('retryCount')}; "
            + (
                f"first epoch {min(resumed):.1f}s after etcd was back"
                if resumed
                else "no epoch left after etcd was back"
            )
            + "; ranks distinct, world 2"
        )
    finally:
        left = bring_down(daemon)
    assert not left, f"seed {seed}: processes left after `caldera down`: {left}"


def check_rounds(text: str, seed: int) -> None:
    """Per round: distinct ranks 0..W-1, W == 2; a round after the first resumed from a checkpoint."""
    by_round: dict[int, list[tuple[int, int, int]]] = {}
    for world, rank, round_, resume in START.findall(text):
        by_round.setdefault(int(round_), []).append((int(world), int(rank), int(resume)))
    assert by_round, f"seed {seed}: no worker started:\n{text[-3000:]}"
    for round_, starts in sorted(by_round.items()):
        ranks = [rank for _, rank, _ in starts]
        assert all(world == 2 for world, _, _ in starts), f"seed {seed}: round {round_}: a world not of 2: {starts}"
        assert len(ranks) == len(set(ranks)), f"seed {seed}: round {round_}: a rank twice: {starts}"
        if round_ > 0:
            assert all(resume >= 1 for *_, resume in starts), f"seed {seed}: round {round_} started over: {starts}"


def trainers_gone(daemon: Daemon) -> None:
    """Once the job is done only the daemon and its etcd are left of the home: no launcher, no worker."""
    info = read_daemon(daemon.home)
    assert info is not None
    keep = {info.pid, etcd_pid(daemon.home)}
    seen: dict[str, Any] = {}

    def only_the_daemon() -> bool:
        seen["left"] = [line for line in processes_of(daemon.home) if int(line.split(":", 1)[0]) not in keep]
        return not seen["left"]

    try:
        wait_until(only_the_daemon, timeout=60, what="the job's processes to end")
    except AssertionError as e:
        raise AssertionError(f"{e}: {seen['left']}") from None
