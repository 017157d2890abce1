"""Helpers for the local executor's tests: specs with sane defaults, event recorders, parked programs.

A *parked* program writes its pid to `ready` in its working directory and waits for signals:
SIGUSR1 makes it exit with the code it was given, SIGTERM ends it (unless told to ignore it).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from caldera.backends.local import LocalExecutor
from caldera.backends.process import DONE_FILE, PROC_FILE, ProcessEvent, ProcessSpec, ProcRecord, pod_dir
from caldera.testing.waiting import wait_until

NS = "ns"

PARKED = """
import os, signal, sys
code, on_term = int(sys.argv[1]), sys.argv[2]
signal.signal(signal.SIGUSR1, lambda *_: sys.exit(code))
if on_term == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open("ready.tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace("ready.tmp", "ready")
while True:
    signal.pause()
"""


def parked(code: int = 0, *, on_term: str = "die") -> tuple[str, ...]:
    return (sys.executable, "-c", PARKED, str(code), on_term)


def sh(script: str) -> tuple[str, ...]:
    return ("/bin/sh", "-c", script)


def python(script: str, *args: str) -> tuple[str, ...]:
    return (sys.executable, "-c", script, *args)


@dataclass
class Recorder:
    """A `report` callback that keeps the events and lets a test wait for them."""

    then: Callable[[ProcessEvent], None] | None = None  # what the owner does next, on the watcher thread
    events: list[ProcessEvent] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)

    def __call__(self, event: ProcessEvent) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()
        if self.then is not None:
            self.then(event)

    def of(self, name: str) -> list[ProcessEvent]:
        with self.cond:
            return [e for e in self.events if e.key == f"{NS}/{name}"]

    def wait_end(self, name: str, timeout: float = 10.0) -> ProcessEvent:
        """The first end ("exited" or "stopped") reported for pod `name`, waiting for it if need be."""
        wait_until(lambda: self._end(name), timeout, f"the end of pod {name}", condition=self.cond)
        end = self._end(name)
        assert end is not None
        return end

    def _end(self, name: str) -> ProcessEvent | None:
        return next((e for e in self.events if e.key == f"{NS}/{name}" and e.kind != "running"), None)


@dataclass
class Pods:
    home: Path
    executors: list[LocalExecutor] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)  # every group started, for the sweep

    def executor(
        self, *, grace: float = 5.0, then: Callable[[ProcessEvent], None] | None = None
    ) -> tuple[LocalExecutor, Recorder]:
        recorder = Recorder(then)
        executor = LocalExecutor(self.home, recorder, grace=grace)
        self.executors.append(executor)
        return executor, recorder

    def dir(self, name: str) -> Path:
        return pod_dir(self.home, f"{NS}/{name}")

    def spec(
        self,
        name: str,
        argv: tuple[str, ...],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        files: Mapping[str, str] | None = None,
        attempt: int = 0,
    ) -> ProcessSpec:
        return ProcessSpec(
            key=f"{NS}/{name}",
            argv=argv,
            env={"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C.UTF-8"} if env is None else env,
            pod_dir=str(self.dir(name)),
            cwd=cwd,
            files=files or {},
            attempt=attempt,
        )

    def start(self, executor: LocalExecutor, spec: ProcessSpec) -> ProcRecord:
        """Run `spec` on `executor`; its proc.json record."""
        executor.run(spec)
        name = spec.key.split("/")[1]
        # A pod that ended at once (the C shim is quick) may have had its record retired already.
        record = ProcRecord.load(self.dir(name) / PROC_FILE) or self.record_done(name)
        self.groups.append(record.pid)
        return record

    def record(self, name: str) -> ProcRecord:
        """Pod `name`'s record of its running attempt."""
        record = ProcRecord.load(self.dir(name) / PROC_FILE)
        assert record is not None
        return record

    def record_done(self, name: str) -> ProcRecord:
        """Pod `name`'s record of its last attempt whose end was handed out."""
        record = ProcRecord.load(self.dir(name) / DONE_FILE)
        assert record is not None
        return record

    def ready(self, name: str, timeout: float = 10.0) -> int:
        """Wait until parked pod `name` is up; the pid of its command."""
        path = self.dir(name) / "ready"
        wait_until(path.exists, timeout, f"pod {name} to be ready")
        return int(path.read_text())

    def log(self, name: str) -> str:
        return (self.dir(name) / "log").read_text()
