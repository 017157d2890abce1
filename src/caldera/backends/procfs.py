"""Processes seen through /proc and pidfds (Linux): identity, process groups, descendants, killing them for sure.

Used by the shim (`shim.py`, run by path in isolated mode: so this module imports only modules
the interpreter has built in or nearly, as the shim does) and by the executor, which empties
the group of a shim that died.

Invariant of the killers: a process is signalled only through a pidfd opened on it and, for a
group, after its group was read again through that pidfd, so a pid that changed hands since the
scan is never signalled.
"""

from __future__ import annotations

import os
import select

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable
else:
    import _signal as signal  # the C module behind `signal`: the same functions and numbers, no enum

_KILL_ROUNDS = 10  # each round kills every member it saw; more rounds only catch forks in flight


class ProcStat:
    """The fields of /proc/<pid>/stat caldera needs."""

    __slots__ = ("pgrp", "start_ticks", "state")

    def __init__(self, state: str, pgrp: int, start_ticks: int) -> None:
        self.state = state  # R, S, D, Z (zombie), ...
        self.pgrp = pgrp
        self.start_ticks = start_ticks  # field 22: start time since boot in clock ticks; with the pid, an identity

    @property
    def live(self) -> bool:
        return self.state not in ("Z", "X")


def proc_stat(pid: int) -> ProcStat | None:
    """The process's stat, or None if there is no process `pid`."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # comm (field 2) may hold spaces and parentheses: the fields that follow start after the last ')'.
    rest = data[data.rindex(b")") + 2 :].split()
    return ProcStat(state=rest[0].decode(), pgrp=int(rest[2]), start_ticks=int(rest[19]))


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group `pgid`."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []  # the common case, answered without scanning /proc
    except PermissionError:
        pass
    members = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st is not None and st.pgrp == pgid and st.live:
                members.append(int(name))
    return members


def kill_group(pgid: int, *, spare: int | None = None, timeout: float = 10.0) -> bool:
    """SIGKILL every live member of group `pgid` but `spare`, and wait until they are gone.

    The caller must know the group is its own (its leader is alive, or the group is held by
    members, so the number cannot have been reused). Returns False if some process survived
    `timeout` seconds after SIGKILL (uninterruptible sleep).
    """
    for _ in range(_KILL_ROUNDS):
        pids = [p for p in group_members(pgid) if p != spare]
        if not pids:
            return True
        # re-read after pinning each process: its pid may have changed hands since the scan
        if not _kill_pinned(pids, lambda p: (st := proc_stat(p)) is not None and st.pgrp == pgid, timeout):
            return False
    return not [p for p in group_members(pgid) if p != spare]


def descendants(pid: int) -> list[int]:
    """The live processes below `pid` (children, theirs, ...), from /proc/<pid>/task/*/children."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue  # gone meanwhile
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            found.extend(kids)
            todo.extend(kids)
    return found


def kill_tree(pid: int, *, timeout: float = 10.0) -> bool:
    """SIGKILL every process below `pid` (not `pid` itself) and wait until they are gone.

    What a pod started and that left its process group (a daemon that called setsid) is still
    below the shim, a child subreaper: this is how it ends with the pod. False if some process
    survived `timeout` seconds after SIGKILL."""
    for _ in range(_KILL_ROUNDS):
        pids = descendants(pid)
        if not pids:
            return True
        if not _kill_pinned(pids, lambda p: True, timeout):
            return False
    return not descendants(pid)


def _kill_pinned(pids: list[int], still_ours: Callable[[int], bool], timeout: float) -> bool:
    """Pin each of `pids` with a pidfd, SIGKILL those `still_ours` says are (checked once pinned), and wait
    until they are gone; False if some survived `timeout` seconds."""
    fds = []
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        if not still_ours(pid):
            os.close(fd)
            continue
        try:  # noqa: SIM105 (no contextlib here: see the module docstring)
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except ProcessLookupError:
            pass
        fds.append(fd)
    try:
        return wait_exited(fds, timeout)
    finally:
        for fd in fds:
            os.close(fd)


def with_environment(name: str, value: str) -> list[int]:
    """The live processes whose environment has `name=value` (those this user may read)."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        st = proc_stat(int(entry))
        if needle in env and st is not None and st.live:
            found.append(int(entry))
    return found


def wait_gone(pids: list[int], timeout: float) -> bool:
    """Wait until none of `pids` is a live process any more; False if one still is after `timeout` seconds."""
    fds = []
    for pid in pids:
        try:  # noqa: SIM105 (no contextlib here: see the module docstring)
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            pass
    try:
        return wait_exited(fds, timeout)
    finally:
        for fd in fds:
            os.close(fd)


def wait_exited(pidfds: list[int], timeout: float) -> bool:
    """Wait until every process behind `pidfds` has exited; False if none did for `timeout` seconds."""
    poller = select.poll()
    for fd in pidfds:
        poller.register(fd, select.POLLIN)
    left = len(pidfds)
    while left:
        ready = poller.poll(timeout * 1000)
        if not ready:
            return False
        for fd, _ in ready:
            poller.unregister(fd)
            left -= 1
    return True


def exit_code_of(status: int) -> int:
    """A wait status as a shell reports it: the exit code, or 128+N for a death by signal N."""
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code
