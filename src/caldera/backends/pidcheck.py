"""A pod's processes checked and cleaned up by pid: the live process a record names, what a dead shim left.

A pid is trusted only together with its start time (a number is reused once its process is
reaped), and a pidfd pins the process while it is read. What a killed shim leaves outside its
group is found by the CALDERA_POD_DIR every pod's process carries in its environment.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from caldera.backends.procfs import proc_stat, wait_gone, with_environment

POD_DIR_VAR = "CALDERA_POD_DIR"  # in every pod's environment (the runtime sets it): how its processes are known


def kill_marked(where: Path) -> bool:
    """SIGKILL what is left of a pod whose shim died: the processes that still carry its CALDERA_POD_DIR.

    Its descendants that left its group (setsid) went to init with the shim; the environment the
    pod was started with is how they are known (a process may clear it: then it is out of reach)."""
    pids = with_environment(POD_DIR_VAR, str(where))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return wait_gone(pids, 10.0)


def open_same(pid: int, start_ticks: int) -> int | None:
    """A pidfd for `pid` if it is still the live process that started at `start_ticks`."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return None
    st = proc_stat(pid)  # read after pinning it with the pidfd, so it cannot change hands in between
    if st is None or st.start_ticks != start_ticks or not st.live:
        os.close(fd)
        return None
    return fd


def reap(pid: int) -> int | None:
    """Reap `pid` if it is our child; its wait status, or None if it is not ours."""
    try:
        got, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return None
    return status if got == pid else None
