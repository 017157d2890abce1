"""backends/spawn.py: the shim's start through ctypes and its os.posix_spawn fallback do the same thing.

The program started is `cat`: while it waits at the gate, its /proc files say what it started with.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from caldera.backends.procfs import exit_code_of
from caldera.backends.spawn import spawn, spawn_holding_the_gil

STANDARD = (1 << 31) - 1  # signals 1-31 in a /proc mask (the C library keeps its own above)


def masks(pid: int) -> dict[str, int]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {
        k: int(v, 16) & STANDARD
        for k, v in (line.split(":\t") for line in lines if line.startswith(("SigBlk", "SigIgn")))
    }


@pytest.mark.parametrize("start", [spawn, spawn_holding_the_gil], ids=["ctypes", "os.posix_spawn"])
def test_a_new_session_with_the_gate_the_log_and_the_signals_asked_for(start, tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("before\n")
    gate_r, gate_w = os.pipe()
    blocked = (signal.SIGTERM, signal.SIGINT)
    defaults = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}
    try:
        pid = start("/bin/cat", ["cat"], stdin=gate_r, log=str(log), blocked=blocked, defaults=defaults)
    finally:
        os.close(gate_r)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        assert (int(stat[2]), int(stat[3])) == (pid, pid)  # leads its own group and session
        assert Path(f"/proc/{pid}/environ").read_bytes() == b""
        got = masks(pid)
        assert got["SigBlk"] == (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGINT - 1))
        assert got["SigIgn"] == 0  # the test process ignores SIGPIPE; the child does not
    finally:
        os.write(gate_w, b"hello\n")
        os.close(gate_w)
        _, status = os.waitpid(pid, 0)
    assert exit_code_of(status) == 0
    assert log.read_text() == "before\nhello\n"  # appended


def test_a_missing_program_is_an_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        spawn("/nonexistent/prog", ["prog"], stdin=0, log=str(tmp_path / "log"), blocked=(), defaults=frozenset())
