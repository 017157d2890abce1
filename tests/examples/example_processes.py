"""Helpers to run the examples as real local processes, the way caldera's executor will: one process per pod.

Each process gets a hand-built environment (what a framework plugin would inject), its
output goes to a log file, and every process a test started is killed when it ends.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from caldera.utils.clock import SystemClock

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
_CLOCK = SystemClock()

# Variables a developer's shell might carry that would change what an example does.
_SCRUBBED = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "POD_IP",
    "POD_NAME",
    "NAMESPACE",
    "TRAINING_ROLE",
    "PADDLE_TRAINING_ROLE",
)


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free on 127.0.0.1 a moment ago, drawn below the kernel's ephemeral range.

    A port 0 bind hands out is also what the kernel gives outgoing connections: on a busy machine
    one could take it before the example's master listens (then every worker waits for a master
    that never comes). Below that range only another listener can; the bind check skips those."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
    draw = random.Random()
    ports: list[int] = []
    with ExitStack() as stack:
        while len(ports) < count:
            port = draw.randrange(20_000, low)
            sock = stack.enter_context(socket.socket())
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            if port not in ports:
                ports.append(port)
    return ports


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{self.name} still running after {timeout} s; its log:\n{self.log()}")

    def wait_for_log(self, text: str, timeout: float) -> None:
        """Block until `text` is in the log; fail if the process ends first or the time runs out."""
        deadline = _CLOCK.monotonic() + timeout
        while text not in self.log():
            if _CLOCK.monotonic() >= deadline:
                pytest.fail(f"{self.name} did not log {text!r} within {timeout} s; its log:\n{self.log()}")
            try:
                code = self.popen.wait(timeout=0.1)  # the pause between two looks is a wait on the process
            except subprocess.TimeoutExpired:
                continue
            if text not in self.log():
                pytest.fail(f"{self.name} exited with {code} before logging {text!r}; its log:\n{self.log()}")


Start = Callable[..., Proc]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    """start(name, args, env, cwd=tmp_path) → a running Proc; all are killed at the end of the test."""
    procs: list[Proc] = []

    def _start(name: str, args: list[str], env: Mapping[str, str], cwd: Path | None = None) -> Proc:
        full_env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED and not k.startswith("PADDLE_")}
        # One thread per process: several torch workers on two cores otherwise each start a thread per
        # core and spend a loaded machine's time switching between them.
        full_env.setdefault("OMP_NUM_THREADS", "1")
        full_env.update(env)
        log_path = tmp_path / f"{name}.log"
        with log_path.open("wb") as log:
            popen = subprocess.Popen(
                [sys.executable, *args],
                cwd=cwd or tmp_path,
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        proc = Proc(name, popen, log_path)
        procs.append(proc)
        return proc

    try:
        yield _start
    finally:
        for proc in procs:
            if proc.popen.poll() is None:
                proc.popen.kill()
        for proc in procs:
            proc.popen.wait(timeout=30)
