"""Warm spares: Python processes that have already imported the heavy modules, waiting to become workers.

A hot restart starts every worker process again, and a fresh Python that imports torch
spends 2–3 s of CPU before it runs a line of the training script (more when the node's
workers all start at once): most of the time from a fault to training resumed. So for a
command of the form `python [-u|-B|-O]... SCRIPT ARGS` or `python ... -m MODULE ARGS`, the
launcher keeps one spare per local worker: the same interpreter, started ahead of time
with the node's environment, that imports the `--preload` modules (default torch) and then
waits on its stdin. Starting a worker hands a spare the round's environment and argv; it
replaces its environment, then runs the script as `python SCRIPT` would (`__main__`,
`sys.argv`, `sys.path[0]` the script's directory; `-m`: the module, the working directory
first on the path). Any other command (a shell script, `mpirun`, a binary) starts cold.

How a spare is made: forked by a zygote (`zygote.py`), a process that imported the preload
modules once, the node's or the launcher's own; a fork costs milliseconds and no import, so
refills never compete with the round for CPU and a node's new pods start warm. What follows
(priorities, starvation) is about the fallback, spares that import themselves (`COLD`), made
only when no zygote can be reached (`--preload` modules the zygote cannot serve, or it died).

When cold spares start, and at what priority:

- At the launcher's start, at normal priority: the first round needs them at once.
- As soon as a round's workers started (`refill`), behind those taken, so a fault right after
  a restart finds a warm spare too. These import at idle priority: they get only CPU that
  nothing else wants, so they never slow the workers starting beside them (on a small node,
  spares importing torch at normal priority would slow the very restart they are meant to
  speed up). Idle takes two settings: the importing thread runs at SCHED_IDLE (which weighs
  against the other threads of its scheduling group: the pod's cgroup in a container), and the
  spare's session, its own, is set to nice 19 (`/proc/self/autogroup`): with the kernel's
  autogroups on (the default of most distributions), every session is a scheduling group of
  its own that weighs as much as any other, SCHED_IDLE threads or not, so without it a refilled
  spare took as much CPU as the new member importing torch that the whole round waited for.
  The spare's main thread, which runs the script, keeps normal priority.
- On a node whose CPUs are never idle (other work beside the job) an idle import would never
  end, so every `IDLE_PATIENCE` seconds (1) the spare looks at the CPU time its import got: if
  it was starved (under `STARVED_SHARE`, a tenth of a CPU), it goes on at normal priority. An
  import that gets CPU stays idle: the CPUs it uses were free, so a member that joins and
  imports torch at normal priority is not slowed by spares (on two cores: the newcomer's
  import on one, the refills sharing the other, a third of it each). On a node busy with other
  work the refills are starved and go on at normal priority within a second, a second later
  than they used to: there the next fault's warm spare and a newcomer's import share the CPUs
  (with a check every 5 s, the steady faults of benchmarks/elastic_recovery.py found cold
  spares at load 12; whether the 4 s more at idle were the cause was not measured).
- Going back to normal priority (when starved, or when a round takes the spare before its
  import finished) raises the importing thread back (allowed with CAP_SYS_NICE or RLIMIT_NICE,
  e.g. as root) and the session to nice 0 (allowed to anyone; without CAP_SYS_ADMIN the kernel
  takes one such change per 0.1 s for the whole machine, so it is retried); where the thread
  may not be raised, the spare execs itself afresh at normal priority (when starved) or execs
  the command (a cold start when taken): never a start stuck behind busy CPUs.

The cyclic garbage collector is off while a spare imports (it would walk the growing heap of
module objects again and again: about a tenth of the import's CPU for torch), and what was
imported is then frozen out of its reach (`gc.freeze`), so the script's collections do not
walk it either.

What a user could notice: the preloaded modules were imported before the round's variables
were set (torch reads MASTER_ADDR and the rank at `init_process_group`, not at import), and
stdin is /dev/null either way. `--preload none` turns spares off. A spare is a worker
process in waiting: same PDEATHSIG shim, its own process group, killed with the launcher.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence

from caldera.launcher.workers import shimmed
from caldera.launcher.zygote import IMPORT_ALL, READ_JOB, RUN_JOB, Forked, Zygote, open_zygote

Spare = subprocess.Popen[bytes] | Forked  # a spare started cold, or forked by a zygote

_FLAGS = frozenset({"-u", "-B", "-O", "-OO"})
IDLE_PATIENCE = 1.0  # seconds between the checks of a refilled spare's idle import for starvation
STARVED_SHARE = 0.1  # an idle import that got less than this share of a CPU since the last check is starved
# What a PyTorch DDP script imports on its way to the first step (torch alone leaves ~1.5 s of it,
# mostly torch._dynamo, which DDP and torch.optim import on first use).
DEFAULT_PRELOAD = ("torch", "torch.distributed", "torch.nn.parallel", "torch.optim", "torch._dynamo")

# Runs in the spare: import (on an idle-priority thread when asked), wait for the round, become the
# worker. No caldera import: it must work with any interpreter that can run the user's script.
_IMPORT = """\
import gc, json, os, runpy, select, sys, threading, time
names, idle, patience, starved = json.loads(sys.argv[1]), sys.argv[2] == "idle", float(sys.argv[3]), float(sys.argv[4])
lock, wanted, lowered = threading.Lock(), [], []
def group_nice(n):
    try:
        fd = os.open("/proc/self/autogroup", os.O_WRONLY)
    except OSError:
        return False
    try:
        for _ in range(100):
            try:
                os.write(fd, str(n).encode())
                return True
            except BlockingIOError:
                select.select([], [], [], 0.02)
            except OSError:
                return False
        return False
    finally:
        os.close(fd)
def preload():
    with lock:
        if idle and not wanted:
            try:
                os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            except (AttributeError, OSError):
                pass
            if group_nice(19):
                lowered.append(True)
    import_all(names)
def leave_idle():
    with lock:
        wanted.append(True)
        if lowered and group_nice(0):
            lowered.clear()
        if not idle or not loader.is_alive():
            return True
        try:
            os.sched_setscheduler(loader.native_id, os.SCHED_OTHER, os.sched_param(0))
        except ProcessLookupError:
            pass
        except (AttributeError, OSError):
            return False
        return True
def cpu_time():
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(loader.ident))
    except (AttributeError, OSError):
        return None
def wait_idle():
    before = cpu_time()
    while not select.select([0], [], [], patience)[0] and loader.is_alive():
        now = cpu_time()
        if before is None or now is None or now - before < starved * patience:
            return leave_idle()
        before = now
    return True
loader = threading.Thread(target=preload, name="caldera-preload", daemon=True)
loader.start()
if idle and not wait_idle():
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:-3], "now", "0", "0"])
"""
COLD = (
    IMPORT_ALL
    + _IMPORT
    + READ_JOB
    + """\
if not leave_idle():
    os.execvpe(job["command"][0], job["command"], job["env"])
loader.join()
"""
    + RUN_JOB
)


def spare_env(base_env: Mapping[str, str]) -> dict[str, str]:
    """The environment spares start with (the round's replaces it): the node's, one intra-op thread by default."""
    return {"OMP_NUM_THREADS": "1", **base_env}


def warm_form(command: Sequence[str]) -> tuple[str, str, list[str]] | None:
    """(interpreter, module or "", the program's sys.argv) when a spare can run `command`; else None."""
    if not command or not os.path.basename(command[0]).startswith("python"):
        return None
    rest = list(command[1:])
    while rest and rest[0] in _FLAGS:
        rest.pop(0)
    if len(rest) >= 2 and rest[0] == "-m":
        return command[0], rest[1], [rest[1], *rest[2:]]
    if rest and not rest[0].startswith("-"):
        return command[0], "", rest
    return None


class SparePool:
    """Up to `size` warm spares for `command` (none if it has no warm form or nothing is preloaded).

    With `zygote`, spares are forked by the node's zygote (`zygote.py`: milliseconds, no import),
    and started cold (this module's `COLD` program, which imports) only when it is out of reach.
    Used from the launcher's main thread only (PR_SET_PDEATHSIG fires when the thread that
    started a process ends, so spares are started from the one thread that lives as long as
    the launcher)."""

    def __init__(
        self,
        command: Sequence[str],
        env: Mapping[str, str],
        preload: Sequence[str],
        size: int,
        idle_patience: float = IDLE_PATIENCE,
        starved_share: float = STARVED_SHARE,
        zygote: bool = False,
    ) -> None:
        self.command = list(command)
        self.idle_patience = idle_patience
        self.starved_share = starved_share
        self.form = warm_form(command) if preload else None
        self.env = dict(env)
        self.preload = list(preload)
        self.size = size
        self.zygote: Zygote | None = None
        if zygote and self.form is not None:
            self.zygote = open_zygote(self.form[0], self.preload, self.env)
        self._ready: list[Spare] = []
        self._lock = threading.Lock()
        self._closed = False

    def fill(self, idle: bool = False) -> None:
        """Start spares until `size` are waiting; with `idle`, those that import do so at idle priority."""
        with self._lock:
            if self.form is None or self._closed:
                return
            self._ready = [p for p in self._ready if p.poll() is None]
            while len(self._ready) < self.size:
                spare = self._fork() or self._cold(idle)
                if spare is None:
                    self.form = None  # cannot start one: every worker starts cold
                    return
                self._ready.append(spare)

    def _fork(self) -> Forked | None:
        if self.zygote is None:
            return None
        return self.zygote.fork(os.getcwd(), self.env)

    def _cold(self, idle: bool) -> subprocess.Popen[bytes] | None:
        assert self.form is not None
        mode, patience, starved = ("idle", self.idle_patience, self.starved_share) if idle else ("now", 0, 0)
        argv = shimmed([self.form[0], "-c", COLD, json.dumps(self.preload), mode, str(patience), str(starved)])
        try:
            return subprocess.Popen(argv, env=self.env, stdin=subprocess.PIPE, start_new_session=True)
        except OSError:
            return None

    def refill(self) -> None:
        """Replace the spares taken by a round that just started (forked, or cold at idle priority: see the docstring)."""
        self.fill(idle=True)

    def start(self, env: Mapping[str, str]) -> Spare | None:
        """A waiting spare turned into the worker with `env`; None when none is ready (start it cold)."""
        if self.form is None:
            return None
        _, module, argv = self.form
        job = json.dumps({"env": dict(env), "argv": argv, "module": module, "command": self.command}) + "\n"
        while True:
            with self._lock:
                if not self._ready:
                    return None
                proc = self._ready.pop(0)
            if proc.poll() is not None or proc.stdin is None:
                continue
            try:
                proc.stdin.write(job.encode())
                proc.stdin.close()
            except OSError:  # it died meanwhile
                continue
            return proc

    def waiting(self) -> int:
        """How many spares are alive and not yet taken."""
        with self._lock:
            return sum(p.poll() is None for p in self._ready)

    def close(self) -> None:
        """Stop the spares not taken (and this launcher's own zygote; a node's stays for its other pods)."""
        with self._lock:
            self._closed = True
            ready, self._ready = self._ready, []
        for proc in ready:
            if isinstance(proc, Forked):
                proc.close()  # the zygote kills it
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            proc.wait()
        if self.zygote is not None:
            self.zygote.close()
