"""A caldera home per test, executors on it, and a sweep proving no process outlives its test."""

from __future__ import annotations

import os
import signal

import pytest

from caldera.backends.local import LocalExecutor
from caldera.backends.process import DONE_FILE, PROC_FILE, ProcRecord
from caldera.backends.procfs import group_members
from caldera.backends.spawn import NATIVE_SHIM, SHIM_VAR, shim_command

from .harness import Pods


@pytest.fixture(params=["shim.c", "shim.py"])
def pods(tmp_path, request, monkeypatch):
    """Every executor test runs under both shims: they must behave the same."""
    if request.param == "shim.py":
        monkeypatch.setenv(SHIM_VAR, "python")
    elif shim_command() != [str(NATIVE_SHIM)]:
        pytest.skip(f"the C shim is not built ({NATIVE_SHIM}: `make shim`)")
    harness = Pods(tmp_path / "home")
    yield harness
    for executor in harness.executors:
        executor.close()
    # Whatever a test left running, a fresh executor adopts and stops, as `caldera down` would.
    sweeper = LocalExecutor(harness.home, lambda event: None)
    try:
        sweeper.adopt()
        sweeper.stop_all(grace=0, timeout=10)
    finally:
        sweeper.close()
    groups = set(harness.groups)
    for name in (PROC_FILE, DONE_FILE):
        for path in harness.home.glob(f"pods/*/*/{name}"):
            record = ProcRecord.load(path)
            if record is not None:
                groups.add(record.pid)
    left = {g: group_members(g) for g in groups if group_members(g)}
    for pids in left.values():
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
    assert not left, f"processes outlived the test: {left}"
