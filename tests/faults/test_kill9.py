"""kill -9 of the daemon at a random moment while 16 clients submit, scale and delete jobs through the API.

After `caldera up` again: every request answered with success is in the state exactly once (a
job created is there, once; one deleted is gone; a scale is in the job's spec), a request cut
off by the kill may or may not have happened but nothing else; every pod the state says runs
has exactly one process (adopted, or started by the new daemon), no pod runs twice and no
process runs for a pod the state does not run; after `caldera down` no process of the trial
is left, the pods' grandchildren that left their process group included.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from caldera.client import connect
from caldera.core.errors import CalderaError
from caldera.testing.waiting import wait_until

from .kit import Daemon, bring_down, processes_match

CLIENTS = 16
LIVE_JOBS = 4  # per client: more and it deletes or scales (bounds the trial's processes)
ELASTIC = "caldera.dev/elastic-max-worker"
# Sleeps until stopped, with a grandchild that leaves the process group (as a daemonising tool does).
POD = ["sh", "-c", "setsid sleep 600 & exec sleep 600"]


def manifest(name: str, elastic: bool) -> dict[str, Any]:
    container = {"name": "main", "command": POD, "resources": {"requests": {"cpu": "10m", "memory": "8Mi"}}}
    task: dict[str, Any] = {
        "name": "worker",
        "replicas": 1,
        "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
    }
    meta: dict[str, Any] = {"name": name}
    if elastic:
        task["minAvailable"] = 1
        meta["annotations"] = {ELASTIC: "3"}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": meta, "spec": {"tasks": [task]}}


@dataclass
class Known:
    """What a client knows of one job from the answers it got."""

    exists: bool | None = None  # None: the last create or delete got no answer
    replicas: set[int] = field(default_factory=lambda: {1})  # the values its spec may have
    elastic: bool = False


class Answers:
    """How many requests got a success answer so far, for the killer to wait on."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    def one(self) -> None:
        with self.changed:
            self.count += 1
            self.changed.notify_all()


def client(
    home: Path, index: int, rng: random.Random, stop: threading.Event, known: dict[str, Known], answers: Answers
) -> None:
    mine: list[str] = []
    with connect(home, timeout=60) as api:
        for n in range(10_000):
            if stop.is_set():
                return
            live = [j for j in mine if known[j].exists]
            op = rng.random()
            if len(live) < LIVE_JOBS and (op < 0.6 or not live):
                name = f"c{index}-{n}"
                elastic = rng.random() < 0.25
                known[name] = Known(exists=None, elastic=elastic)
                mine.append(name)
                if not _answered(api.apply, manifest(name, elastic)):
                    return
                known[name].exists = True
                answers.one()
            elif op < 0.8 and any(known[j].elastic for j in live):
                name = rng.choice([j for j in live if known[j].elastic])
                replicas = rng.randint(1, 3)
                before = set(known[name].replicas)
                known[name].replicas = before | {replicas}
                if not _answered(api.scale_job, "default", name, replicas):
                    return
                known[name].replicas = {replicas}
                answers.one()
            else:
                name = rng.choice(live)
                known[name].exists = None
                if not _answered(api.delete_job, "default", name):
                    return
                known[name].exists = False
                answers.one()


def _answered(request: Callable[..., object], *args: object) -> bool:
    """Whether the request was answered with success; False if the daemon went (no answer)."""
    try:
        request(*args)
    except CalderaError as e:
        if "cannot reach" in str(e) or "did not answer in time" in str(e):
            return False
        raise
    except httpx.HTTPError:
        return False
    return True


def test_kill9_while_clients_write_loses_nothing_answered(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    daemon = Daemon(tmp_path / "home")
    daemon.up("--nodes", "4", "--cpus-per-node", "2", "--memory-per-node", "4Gi")
    known: dict[str, Known] = {}
    left: list[str] = []
    try:
        stop = threading.Event()
        answers = Answers()
        errors: list[BaseException] = []

        def run(i: int) -> None:
            try:
                client(daemon.home, i, random.Random(rng.random()), stop, known, answers)
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        # The kill comes at a random moment once the clients are under way: after some answers (however
        # slow the machine is), then a random fraction of a second more.
        wanted = rng.randint(5, 60)
        wait_until(
            lambda: answers.count >= wanted or errors, timeout=120, what=f"{wanted} answers", condition=answers.changed
        )
        threading.Event().wait(rng.uniform(0.0, 0.5))
        daemon.kill9()
        stop.set()
        for t in threads:
            t.join(timeout=120)
        assert not errors, f"seed {seed}: a client failed: {errors[0]!r}"

        daemon.up()
        check_state(daemon, known, seed)
        settled = sum(k.exists is not None for k in known.values())
        print(
            f"seed {seed}: killed after {answers.count} answers; {len(known)} jobs asked for, "
            f"{settled} with a settled answer; 0 lost, 0 run twice"
        )
    finally:
        left = bring_down(daemon)
    assert not left, f"seed {seed}: processes left after `caldera down`: {left}"


def check_state(daemon: Daemon, known: dict[str, Known], seed: int) -> None:
    answered = sum(k.exists is not None for k in known.values())
    with connect(daemon.home, timeout=60) as api:
        jobs = api.list_jobs("default")
        names = [j["name"] for j in jobs]
        assert len(names) == len(set(names)), f"seed {seed}: a job listed twice: {sorted(names)}"
        lost = [n for n, k in known.items() if k.exists is True and n not in names]
        revived = [n for n, k in known.items() if k.exists is False and n in names]
        stray = [n for n in names if n not in known]
        assert not lost, f"seed {seed}: {len(lost)} of {answered} answered jobs lost: {lost}"
        assert not revived, f"seed {seed}: deleted jobs back: {revived}"
        assert not stray, f"seed {seed}: jobs nobody created: {stray}"
        for name in names:
            replicas = api.describe_job("default", name)["job"]["spec"]["tasks"][0]["replicas"]
            assert replicas in known[name].replicas, (
                f"seed {seed}: {name} has {replicas} replicas, not one of {known[name].replicas}"
            )

    processes_match(daemon, seed)
