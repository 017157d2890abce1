"""The starter threads (`effects.HeldEffects`): each pod's starts and stops done in order, off the control loop.

Real processes through a real local executor; the executor's `run` is held at a gate where a test
needs a start to stay queued, so what the loop may see meanwhile is seen deterministically.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from caldera.backends.local import LocalExecutor
from caldera.backends.process import ProcessEvent, ProcessSpec, pod_dir
from caldera.system.effects import REFUSED, HeldEffects
from caldera.testing.waiting import wait_until
from caldera.utils.clock import SystemClock

SLEEPER = (sys.executable, "-c", "import signal; signal.pause()")  # ends only when signalled


class GatedExecutor(LocalExecutor):
    """A local executor whose starts wait until the test opens the gate."""

    def __init__(self, home: Path, report: Events) -> None:
        super().__init__(home, report, grace=5.0)
        self.gate = threading.Event()
        self.gate.set()
        self.held_back: dict[str, threading.Event] = {}  # pod key → its own gate (the others pass)
        self.started: list[str] = []

    def run(self, spec: ProcessSpec) -> None:
        assert self.gate.wait(timeout=60), "the test never opened the gate"
        own = self.held_back.get(spec.key)
        assert own is None or own.wait(timeout=60), f"the test never let {spec.key} start"
        super().run(spec)
        self.started.append(spec.key)


class Events:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.seen: list[ProcessEvent] = []

    def __call__(self, event: ProcessEvent) -> None:
        with self.cond:
            self.seen.append(event)
            self.cond.notify_all()

    def end_of(self, key: str, timeout: float = 30.0) -> ProcessEvent:
        def found() -> ProcessEvent | None:
            return next((e for e in self.seen if e.key == key and e.kind != "running"), None)

        wait_until(lambda: found() is not None, timeout, f"the end of {key}", condition=self.cond)
        event = found()
        assert event is not None
        return event


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[GatedExecutor, HeldEffects, Events]]:
    events = Events()
    executor = GatedExecutor(tmp_path / "home", events)
    held = HeldEffects(executor, events, SystemClock())
    try:
        yield executor, held, events
    finally:
        executor.gate.set()
        held.drain()
        executor.stop_all(grace=0, timeout=30)
        executor.close()


def spec(executor: LocalExecutor, name: str, argv: tuple[str, ...] = SLEEPER) -> ProcessSpec:
    key = f"ns/{name}"
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    return ProcessSpec(key=key, argv=argv, env=env, pod_dir=str(pod_dir(executor.home, key)))


def test_nothing_starts_before_release_and_release_returns_before_the_start(setup) -> None:
    executor, held, _events = setup
    held.run(spec(executor, "a"))
    assert held.running() == [] and len(held) == 1  # held: the turn is not committed
    executor.gate.clear()
    held.release()  # returns although the start cannot happen yet
    assert held.running() == ["ns/a"] and executor.running() == []  # queued, and counted as running
    executor.gate.set()
    wait_until(lambda: executor.running() == ["ns/a"], 30, "pod a to start")
    assert held.running() == ["ns/a"]


def test_a_stop_released_while_its_start_is_queued_stops_the_pod_after_it_started(setup) -> None:
    executor, held, events = setup
    executor.gate.clear()
    held.run(spec(executor, "a"))
    held.release()
    held.stop("ns/a", grace=5.0)  # a later turn: the start is still queued
    held.release()
    assert executor.running() == []
    executor.gate.set()
    end = events.end_of("ns/a")
    assert (end.kind, end.exit_code) == ("stopped", 128 + 15)  # SIGTERM, after it started: not left running
    assert executor.started == ["ns/a"]


def test_each_pods_effects_are_done_in_the_order_they_were_asked_for(setup) -> None:
    executor, held, events = setup
    executor.gate.clear()
    names = [f"p{i}" for i in range(6)]
    for name in names:
        held.run(spec(executor, name, ("true",) if name != "p3" else SLEEPER))
    held.stop("ns/p3", grace=5.0)
    held.stop("ns/p0", grace=5.0)  # ignored if p0 ended already, stopped otherwise: never left running
    held.release()
    assert held.running() == [f"ns/{n}" for n in names]
    executor.gate.set()
    ends = {n: events.end_of(f"ns/{n}") for n in names}
    assert sorted(executor.started) == [f"ns/{n}" for n in names]  # each once; pods on other threads interleave
    assert (ends["p3"].kind, ends["p3"].exit_code) == ("stopped", 128 + 15)  # its stop came after its start
    assert all(ends[n].exit_code == 0 for n in names if n not in ("p0", "p3"))
    wait_until(lambda: held.running() == [], 30, "every pod to end")


def test_a_slow_start_holds_up_only_the_pods_on_its_own_thread(setup) -> None:
    executor, held, events = setup
    slow = threading.Event()
    executor.held_back["ns/slow"] = slow
    others = [f"q{i}" for i in range(12)]
    for name in ["slow", *others]:
        held.run(spec(executor, name, ("true",)))
    held.release()
    thread_of = held.thread_of  # which starter does a pod's effects
    free = [n for n in others if thread_of(f"ns/{n}") != thread_of("ns/slow")]
    assert free, "every pod on the slow one's thread: pick other names"
    for name in free:
        assert events.end_of(f"ns/{name}").exit_code == 0  # done while "slow" still waits at its gate
    assert "ns/slow" not in executor.started and "ns/slow" in held.running()
    slow.set()
    assert events.end_of("ns/slow").exit_code == 0


def test_a_refused_start_comes_back_as_the_pods_end(setup) -> None:
    executor, held, events = setup
    held.run(spec(executor, "a"))
    held.run(spec(executor, "a"))  # the second start of a running pod is refused
    held.release()
    end = events.end_of("ns/a")
    assert (end.kind, end.exit_code) == ("exited", REFUSED) and "already running" in end.note
    assert executor.running() == ["ns/a"]


def test_drain_waits_for_every_released_effect(setup) -> None:
    executor, held, _events = setup
    executor.gate.clear()
    for name in ("a", "b"):
        held.run(spec(executor, name))
    held.release()
    threading.Timer(0.2, executor.gate.set).start()
    held.drain()
    assert sorted(executor.running()) == ["ns/a", "ns/b"]
    held.run(spec(executor, "c"))
    with pytest.raises(RuntimeError, match="closed"):
        held.release()
