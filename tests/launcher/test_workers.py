"""WorkerGroup's rules that need no real worker: what it signals."""

from __future__ import annotations

import signal

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
