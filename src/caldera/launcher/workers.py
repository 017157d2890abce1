"""The training processes of one round on this node: start, watch, stop; none outlives the launcher.

- Each worker is started with PR_SET_PDEATHSIG=SIGKILL (Linux prctl through ctypes), so a
  launcher killed with -9 takes its workers with it (reference/elastic-etcd.md pitfall 13).
  prctl is called by a tiny exec shim (`python -I -S -c ...` that then execs the command):
  calling Python in the child between fork and exec (`preexec_fn`) is unsafe in a process
  with threads (the keep-alive, the watch, gRPC's), and the shim costs ~20 ms. The shim
  also checks that its parent is still the launcher, closing the race where the launcher
  dies between fork and prctl. Workers are started from the launcher's main thread only:
  PDEATHSIG fires when the *thread* that forked the child ends.
- Each worker leads its own process group, so stopping it reaches what it started (data
  loader processes): SIGTERM to the group, `grace` seconds, then SIGKILL to the group.
  Processes are tracked by PID, never found by name.
- stdout and stderr are inherited (the pod's log); stdin is /dev/null.
- A thread per worker waits for it and reports its exit code to `on_exit`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from caldera.utils.clock import Clock

if TYPE_CHECKING:
    from caldera.launcher.spares import SparePool

_SHIM = """\
import ctypes, os, signal, sys
if ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0) != 0:
    sys.stderr.write("caldera launch: prctl(PR_SET_PDEATHSIG) failed\\n"); os._exit(126)
if os.getppid() != int(sys.argv[1]):
    os._exit(137)
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as e:
    sys.stderr.write("caldera launch: cannot run %r: %s\\n" % (sys.argv[2], e.strerror)); os._exit(127)
"""


REAPED_WAIT = 5.0  # seconds to wait for a reaper thread's note of a process the kernel has reaped


class Process(Protocol):
    """A worker as the group sees it: a child (`subprocess.Popen`) or a spare forked by a zygote (`zygote.Forked`)."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


@dataclass(frozen=True, slots=True)
class WorkerExit:
    round: int
    local_rank: int
    pid: int
    code: int  # negative: killed by that signal


def shimmed(command: Sequence[str]) -> list[str]:
    if not sys.platform.startswith("linux"):
        return list(command)
    return [sys.executable, "-I", "-S", "-c", _SHIM, str(os.getpid()), *command]


def _exit_code(proc: Process) -> int | None:
    """The process's exit code, None while it runs.

    Its reaper thread waits on it, holding the process's wait lock, so `poll()` answers None whenever that thread
    holds it: also in the moment between the kernel reaping the process for it and the thread, which needs the GIL
    again, noting the code (found by a flake hunt: on a loaded machine a round whose workers had all ended with 0
    was taken as still running). A process the kernel no longer has is waited for: the code comes within moments."""
    code = proc.poll()
    if code is not None or proc.pid <= 0:
        return code
    try:
        os.kill(proc.pid, 0)  # a zombie still answers: its reaper has not taken it yet
        return None
    except ProcessLookupError:
        pass
    except PermissionError:  # the pid is someone else's already
        return None
    with contextlib.suppress(subprocess.TimeoutExpired):
        return proc.wait(timeout=REAPED_WAIT)
    return None


def _kill_group(pid: int, sig: signal.Signals) -> None:
    if pid <= 0:  # a spare the zygote never forked (`Forked.pid` 0): killpg(0) would signal the launcher's own group
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class WorkerGroup:
    """The `len(envs)` processes of `command` for one round on this node."""

    def __init__(
        self,
        command: Sequence[str],
        envs: Sequence[Mapping[str, str]],
        round_: int,
        on_exit: Callable[[WorkerExit], None],
        base_env: Mapping[str, str] | None = None,
        spares: SparePool | None = None,
    ) -> None:
        self.command = tuple(command)
        self._spares = spares
        self.round = round_
        self._envs = [dict(e) for e in envs]
        self._base = dict(os.environ if base_env is None else base_env)
        self._on_exit = on_exit
        self._procs: list[Process] = []
        self._codes: dict[int, int] = {}
        self._lock = threading.Lock()

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def start(self) -> None:
        """Start every process; if one cannot start, stop those started and raise OSError."""
        argv = shimmed(self.command)
        for local_rank, env in enumerate(self._envs):
            full = {**self._base, **env}
            proc: Process | None = self._spares.start(full) if self._spares is not None else None
            try:
                if proc is None:
                    proc = subprocess.Popen(argv, env=full, stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError:
                self.stop(0.0)
                raise
            self._procs.append(proc)
            threading.Thread(
                target=self._reap, args=(local_rank, proc), name=f"caldera-worker-{local_rank}", daemon=True
            ).start()

    def _reap(self, local_rank: int, proc: Process) -> None:
        code = proc.wait()
        with self._lock:
            self._codes[local_rank] = code
        self._on_exit(WorkerExit(self.round, local_rank, proc.pid, code))

    def codes(self) -> dict[int, int]:
        """Exit codes of the workers that have exited, by local rank."""
        with self._lock:
            return dict(self._codes)

    def running(self) -> bool:
        return any(p.poll() is None for p in self._procs)

    def all_exited_0(self) -> bool:
        """Whether every worker has exited, each with 0 (read from the processes, not from the reapers' reports)."""
        return bool(self._procs) and all(_exit_code(p) == 0 for p in self._procs)

    def stop(self, grace: float, clock: Clock | None = None) -> None:
        """SIGTERM every worker's group, wait up to `grace` seconds, SIGKILL what is left; returns
        once every worker has exited (their groups are SIGKILLed too, for stray children)."""
        alive = [p for p in self._procs if p.poll() is None]
        for proc in alive:
            _kill_group(proc.pid, signal.SIGTERM)
        start = clock.now() if clock is not None else 0.0
        for proc in alive:
            left = grace - (clock.now() - start) if clock is not None else grace
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.0, left))
        for proc in self._procs:
            _kill_group(proc.pid, signal.SIGKILL)
        for proc in self._procs:
            proc.wait()
