"""WorkerGroup's rules that need no real worker: what it signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from caldera.launcher.workers import WorkerExit, WorkerGroup


class NeverForked:
    """A spare the zygote died before forking: `zygote.Forked` then has pid 0 and has ended (-SIGKILL)."""

    pid = 0

    def poll(self) -> int | None:
        return -signal.SIGKILL

    def wait(self, timeout: float | None = None) -> int:
        return -signal.SIGKILL


class OneSpare:
    def start(self, env: object) -> NeverForked:
        return NeverForked()


def test_stopping_a_spare_never_forked_signals_no_process_group(monkeypatch: pytest.MonkeyPatch) -> None:
    signalled: list[tuple[int, int]] = []
    monkeypatch.setattr("os.killpg", lambda pid, sig: signalled.append((pid, sig)))
    exits: list[WorkerExit] = []
    group = WorkerGroup(["python", "train.py"], [{}], 0, exits.append, {}, OneSpare())  # type: ignore[arg-type]
    group.start()
    group.stop(5.0)
    assert signalled == []  # killpg(0, ...) would have signalled the launcher's own group


class ReapedUnnoted:
    """A worker the kernel has reaped for its reaper thread, which has not noted its code yet (it waits for the
    GIL): `Popen.poll()` answers None then (that thread holds the wait lock), and a wait returns the code."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def poll(self) -> int | None:
        return None

    def wait(self, timeout: float | None = None) -> int:
        return 0


class Running:
    """A worker still running: a wait without a timeout (its reaper's) blocks until the test ends it."""

    def __init__(self, ended: threading.Event) -> None:
        self.pid = os.getpid()  # a process that exists
        self.ended = ended
        self.timed_waits = 0

    def poll(self) -> int | None:
        return None

    def wait(self, timeout: float | None = None) -> int:
        if timeout is not None:
            self.timed_waits += 1
            raise subprocess.TimeoutExpired("running", timeout)
        self.ended.wait()
        return 0


class Spares:
    def __init__(self, procs: list[object]) -> None:
        self.procs = procs

    def start(self, env: object) -> object:
        return self.procs.pop(0)


def gone_pid() -> int:
    """The pid of a process that has ended and been reaped."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_workers_reaped_but_not_yet_noted_count_as_exited() -> None:
    group = WorkerGroup(
        ["train"], [{}, {}], 0, lambda _: None, {}, Spares([ReapedUnnoted(gone_pid()) for _ in range(2)])
    )  # type: ignore[arg-type]
    group.start()
    assert group.all_exited_0()


def test_a_running_worker_is_not_waited_for_when_asking_whether_all_exited() -> None:
    ended = threading.Event()
    running = Running(ended)
    group = WorkerGroup(["train"], [{}, {}], 0, lambda _: None, {}, Spares([ReapedUnnoted(gone_pid()), running]))  # type: ignore[arg-type]
    group.start()
    try:
        assert not group.all_exited_0()
        assert running.timed_waits == 0
    finally:
        ended.set()


def test_a_launcher_that_knows_its_exit_code_ends_even_if_closing_hangs() -> None:
    """`exit_within`: past its limit, the threads' stacks go to stderr and the process exits with its code."""
    hangs = (
        "from caldera.launcher.main import exit_within; import threading\nexit_within(0.2)(7)\nthreading.Event().wait()"
    )
    done = subprocess.run([sys.executable, "-c", hangs], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 7
    assert "still closing 0.2s after its exit (code 7)" in done.stderr and "most recent call first" in done.stderr


def test_a_launcher_stuck_holding_the_interpreter_lock_still_ends_with_its_stacks() -> None:
    """The Python timer cannot run while the main thread holds the lock in C code (a regular expression here;
    the gRPC core's teardown in the etcd client's close, in life): faulthandler's C timer ends it, 5 s later."""
    stuck = (
        "from caldera.launcher.main import exit_within; import re\nexit_within(0.2)(7)\n"
        "re.match(r'(a+)+$', 'a' * 64 + 'b')"
    )
    done = subprocess.run([sys.executable, "-c", stuck], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert "Timeout" in done.stderr and 'File "<string>", line 3' in done.stderr


def test_the_launcher_process_ends_once_its_exit_code_is_known_not_at_the_interpreters_shutdown() -> None:
    """`end`: nothing of the interpreter's own shutdown runs (an atexit handler here; the last garbage
    collection's finalizers and gRPC's exit handlers, in life), and what was written is flushed first."""
    ends = (
        "import atexit, sys\nfrom caldera.launcher.main import end\n"
        "atexit.register(lambda: print('shutdown ran'))\nprint('written', end='')\nend(3)"
    )
    done = subprocess.run([sys.executable, "-c", ends], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 3 and done.stdout == "written"
