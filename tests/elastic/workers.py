"""Run examples/elastic-ddp/train.py as a launcher would, by hand: one process per rank with torch's variables.

A `Pool` starts the ranks of one round on a free loopback port, each with its log file,
and kills (SIGKILL, by pid) whatever is still running when it is closed.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from caldera.testing.waiting import TRAINING_DEADLINE, wait_until

from .conftest import LAUNCHER_VARIABLES

TRAIN = Path(__file__).resolve().parents[2] / "examples" / "elastic-ddp" / "train.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Worker:
    rank: int
    popen: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait(self, timeout: float = TRAINING_DEADLINE) -> int:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"rank {self.rank} still running after {timeout} s; its log:\n{self.log()}")

    def accuracy(self) -> float:
        found = re.search(r"^test accuracy (\d\.\d+)$", self.log(), re.MULTILINE)
        assert found, self.log()
        return float(found.group(1))

    def epoch_losses(self) -> dict[int, str]:
        return {int(e): loss for e, loss in re.findall(r"^epoch=(\d+) .* loss=(\S+) ", self.log(), re.MULTILINE)}


@dataclass
class Pool:
    directory: Path
    workers: list[Worker] = field(default_factory=list)

    def start(
        self,
        world_size: int,
        *,
        name: str,
        args: list[str],
        restart: int = 0,
        rank_args: Sequence[list[str]] = (),
    ) -> list[Worker]:
        """The `world_size` ranks of one round, with TORCHELASTIC_RESTART_COUNT=restart.

        Every rank gets `args`, then `rank_args[rank]` if given.
        """
        port = free_port()
        base = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
        started = []
        for rank in range(world_size):
            env = base | {
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port),
                "WORLD_SIZE": str(world_size),
                "RANK": str(rank),
                "LOCAL_RANK": str(rank),
                "LOCAL_WORLD_SIZE": str(world_size),
                "TORCHELASTIC_RESTART_COUNT": str(restart),
            }
            log_path = self.directory / f"{name}-rank{rank}.log"
            with log_path.open("wb") as log:
                popen = subprocess.Popen(
                    [sys.executable, str(TRAIN), *args, *(rank_args[rank] if rank_args else [])],
                    cwd=self.directory,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            started.append(Worker(rank, popen, log_path))
        self.workers.extend(started)
        return started

    def run(self, world_size: int, *, name: str, args: list[str], restart: int = 0) -> list[Worker]:
        """Start a round and wait for every rank to exit 0."""
        workers = self.start(world_size, name=name, args=args, restart=restart)
        for worker in workers:
            assert worker.wait() == 0, worker.log()
        return workers

    def wait_for_line(self, worker: Worker, text: str, timeout: float = TRAINING_DEADLINE) -> None:
        wait_until(
            lambda: text in worker.log() or worker.popen.poll() is not None,
            timeout=timeout,
            what=f"rank {worker.rank} to log {text!r}",
            interval=0.02,
        )
        assert text in worker.log(), f"rank {worker.rank} exited before logging {text!r}:\n{worker.log()}"

    def close(self) -> None:
        for worker in self.workers:
            if worker.popen.poll() is None:
                worker.popen.kill()
        for worker in self.workers:
            worker.popen.wait(timeout=30)
