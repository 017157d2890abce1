"""The state directory's filesystem fills up while clients write: refused cleanly, nothing answered lost, and back once space is.

The daemon's home is a small tmpfs (a real filesystem, so SQLite meets a real ENOSPC), filled
to the byte by a file of the test's while the daemon runs. Then:

- a write is answered 201 (SQLite could still write, reusing its log's space: then it is
  durable) or 503 Unavailable saying the state cannot be saved, never anything else; once the
  daemon knows, a write is refused before it changes anything ("no change is accepted");
- reads go on (every job answered so far is listed and can be read), the daemon stays up;
- with the space back, writes are answered 201 again without a restart;
- after a `kill -9` (while the disk is still full, or after it recovered: the seed chooses) and
  `caldera up`: every write answered with success is there, every one refused at once is not,
  the file passes SQLite's integrity check, every running pod has one process and no other
  runs; after `caldera down` nothing of the trial is left.

The one request in between (the turn whose commit failed, answered 503 "not saved yet") was
applied in memory: it is saved once space is back, lost if the daemon dies before; the test
accepts either.
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from caldera.client import read_daemon, read_token
from caldera.testing.waiting import wait_until

from .kit import Daemon, bring_down, fill, processes_match, small_filesystem

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
REFUSED_AT_ONCE = "no change is accepted"
NOT_SAVED_YET = "this change is not saved yet"


def manifest(name: str) -> dict[str, Any]:
    container = {"name": "main", "command": ["sleep", "600"], "resources": {"requests": {"cpu": "10m"}}}
    task = {
        "name": "worker",
        "replicas": 1,
        "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"tasks": [task]},
    }


@dataclass
class Ledger:
    """What the answers say each job must be after a restart: there, gone, or either."""

    present: set[str] = field(default_factory=set)
    absent: set[str] = field(default_factory=set)
    either: set[str] = field(default_factory=set)
    refusals: int = 0  # 503s refused at once

    def created(self, name: str, r: httpx.Response, seed: int) -> None:
        self._settle(name, r, seed, ok=201, done=self.present, undone=self.absent)

    def deleted(self, name: str, r: httpx.Response, seed: int) -> None:
        self._settle(name, r, seed, ok=200, done=self.absent, undone=self.present)

    def _settle(self, name: str, r: httpx.Response, seed: int, ok: int, done: set[str], undone: set[str]) -> None:
        for bucket in (self.present, self.absent, self.either):
            bucket.discard(name)
        if r.status_code == ok:
            done.add(name)
            return
        assert r.status_code == 503, f"seed {seed}: {name}: {r.status_code} {r.text}"
        body = r.json()
        assert body["reason"] == "Unavailable" and "Traceback" not in body["error"], body
        assert "cannot save its state" in body["error"] and "disk is full" in body["error"], body
        if REFUSED_AT_ONCE in body["error"]:
            self.refusals += 1
            undone.add(name)
        else:
            assert NOT_SAVED_YET in body["error"], body
            self.either.add(name)


def api_client(home: Path) -> httpx.Client:
    info = read_daemon(home)
    assert info is not None
    return httpx.Client(base_url=info.url, headers={"Authorization": f"Bearer {read_token(home)}"}, timeout=60)


@pytest.mark.trials(0.2)  # a filesystem mounted, filled, and two daemons per trial: a fifth of the count
def test_a_full_disk_refuses_writes_keeps_reads_and_loses_nothing_answered(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    kill_while_full = rng.random() < 0.5
    with small_filesystem(tmp_path / "home", "48m") as home:
        daemon = Daemon(home)
        daemon.up("--nodes", "2", "--cpus-per-node", "2", "--memory-per-node", "4Gi")
        ledger = Ledger()
        left: list[str] = []
        try:
            with api_client(home) as api:
                for n in range(rng.randint(2, 6)):
                    ledger.created(f"before-{n}", api.post(JOBS, json=manifest(f"before-{n}")), seed)
                assert ledger.present and not ledger.either
                filler = fill(home)

                # Writes until the daemon refuses them at once (a few may still fit in SQLite's log).
                for n in range(500):
                    live = sorted(ledger.present)
                    if live and rng.random() < 0.3:
                        name = rng.choice(live)
                        ledger.deleted(name, api.delete(f"{JOBS}/{name}"), seed)
                    else:
                        ledger.created(f"full-{n}", api.post(JOBS, json=manifest(f"full-{n}")), seed)
                    if ledger.refusals >= 3:
                        break
                assert ledger.refusals >= 3, f"seed {seed}: 500 writes on a full disk and not refused: {ledger}"

                # Reads go on.
                listed = {j["name"] for j in _ok(api.get(JOBS))["items"]}
                assert ledger.present <= listed and not (listed & ledger.absent), (seed, listed, ledger)
                for name in sorted(ledger.present):
                    assert _ok(api.get(f"{JOBS}/{name}"))["name"] == name
                assert _ok(api.get("/info"))["home"] == str(home)

                if kill_while_full:
                    daemon.kill9()
                    filler.unlink()
                    daemon.up()
                else:
                    filler.unlink()
                    attempts = iter(range(1000))

                    def accepted() -> bool:
                        name = f"back-{next(attempts)}"
                        ledger.created(name, api.post(JOBS, json=manifest(name)), seed)
                        return name in ledger.present

                    wait_until(accepted, timeout=60, interval=0.5, what="a write accepted once space is back")
                    daemon.kill9()
                    daemon.up()
            check_after_restart(daemon, ledger, seed)
            print(
                f"seed {seed}: {'killed while full' if kill_while_full else 'recovered, then killed'}; "
                f"{len(ledger.present)} jobs answered there, {len(ledger.absent)} refused or deleted, "
                f"{len(ledger.either)} unsaved when answered; 0 lost"
            )
        finally:
            left = bring_down(daemon)
        assert not left, f"seed {seed}: processes left after `caldera down`: {left}"


def check_after_restart(daemon: Daemon, ledger: Ledger, seed: int) -> None:
    with api_client(daemon.home) as api:
        listed = {j["name"] for j in _ok(api.get(JOBS))["items"]}
    lost = ledger.present - listed
    revived = ledger.absent & listed
    assert not lost, f"seed {seed}: answered writes lost: {sorted(lost)}{daemon.log()}"
    assert not revived, f"seed {seed}: refused or deleted jobs there: {sorted(revived)}"
    assert listed <= ledger.present | ledger.either, f"seed {seed}: jobs nobody created: {listed}"
    db = sqlite3.connect(f"file:{daemon.home / 'state.db'}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        db.close()
    processes_match(daemon, seed)


def _ok(r: httpx.Response) -> Any:
    assert r.status_code == 200, r.text
    return r.json()
