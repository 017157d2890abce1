"""Several launcher agents in one process over one MemoryKV and a ManualClock, driven step by step.

No threads of the test's own and no timing: `pump` lets every agent handle what it was told
and act, until a condition holds. The agents' workers are real processes (`worker.py`), so
waiting on them goes through `wait_until` with a deadline.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from caldera.launcher import rendezvous as rdzv
from caldera.launcher.agent import Agent
from caldera.launcher.eventlog import EventLog
from caldera.launcher.events import next_events
from caldera.launcher.memkv import MemoryKV
from caldera.launcher.settings import Settings
from caldera.testing.waiting import wait_until
from caldera.utils.clock import ManualClock

WORKER = Path(__file__).with_name("worker.py")


class Borrowed:
    """The shared store as one agent's connection: everything but `close` goes to the store."""

    def __init__(self, kv: MemoryKV) -> None:
        self._kv = kv

    def __getattr__(self, name: str) -> object:
        return getattr(self._kv, name)

    def close(self) -> None:
        pass


@dataclass
class Node:
    pod: str
    agent: Agent
    out: io.StringIO
    code: int | None = None

    def lines(self) -> list[str]:
        return self.out.getvalue().splitlines()

    def said(self, text: str) -> bool:
        return any(line.endswith(text) or f" {text}" in line for line in self.lines())


@dataclass
class Agents:
    kv: MemoryKV
    clock: ManualClock
    workdir: Path
    job: str = "job"
    nodes: list[Node] = field(default_factory=list)

    def add(
        self,
        pod: str,
        *,
        np: tuple[int, int] = (3, 3),
        max_restarts: int = 3,
        elastic_timeout: float = 30.0,
        ttl: int = 5,
        nproc: int = 1,
    ) -> Node:
        settings = Settings(
            server="memory:1",
            job_id=self.job,
            lo=np[0],
            hi=np[1],
            nproc=nproc,
            host="127.0.0.1",
            max_restarts=max_restarts,
            elastic_timeout=elastic_timeout,
            ttl=ttl,
            grace=2.0,
            pod=pod,
            command=(sys.executable, str(WORKER), str(self.workdir)),
            preload=("json",),  # warm spares with a module that imports in no time (the default is torch)
        )
        out = io.StringIO()
        env = dict(os.environ, CALDERA_POD_NAME=pod)
        agent = Agent(settings, lambda: Borrowed(self.kv), self.clock, EventLog(self.job, self.clock, out), env)  # type: ignore[arg-type,return-value]
        node = Node(pod, agent, out)
        self.nodes.append(node)
        return node

    def pump_once(self) -> None:
        self.kv.flush()
        for node in self.nodes:
            if node.code is not None:
                continue
            for event in next_events(node.agent.events, 0):
                node.code = node.agent.handle(event)
                if node.code is not None:
                    break
            if node.code is None:
                node.code = node.agent.step()
            if node.code is not None:
                node.agent.close()

    def pump(self, until: Callable[[], object], what: str, timeout: float = 20.0) -> None:
        def look() -> object:
            self.pump_once()
            return until()

        wait_until(look, timeout=timeout, what=what)

    def advance(self, seconds: float, step: float = 1.0) -> None:
        """Move the clock in steps, keeping every registered agent's lease refreshed on the way."""
        left = seconds
        while left > 0:
            dt = min(step, left)
            self.clock.advance(dt)
            left -= dt
            for node in self.nodes:
                if node.code is None and node.agent.keepalive is not None:
                    node.agent.keepalive.beat()
            self.pump_once()

    # -- what the workers recorded

    def started(self, pod: str, round_: int, local: int = 0) -> dict[str, object] | None:
        path = self.workdir / f"{pod}-r{round_}-l{local}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def release(self, code: int = 0, pod: str | None = None, round_: int | None = None) -> None:
        name = "exit" + (f"-{pod}" if pod else "") + (f"-r{round_}" if round_ is not None else "")
        (self.workdir / name).write_text(str(code))

    def view(self) -> rdzv.JobView:
        return rdzv.read(self.kv, self.job)

    def close(self) -> None:
        for node in self.nodes:
            if node.code is None:
                node.agent.close()
