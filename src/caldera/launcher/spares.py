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
first on the path). New spares are started behind those taken, so the next restart is warm
too, but only `REFILL_DELAY` seconds into the round: on a small node, spares importing torch
while the new round's workers start would slow the very restart they are meant to speed up. Any other command (a shell script, `mpirun`, a binary) starts cold, as before.

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

_FLAGS = frozenset({"-u", "-B", "-O", "-OO"})
REFILL_DELAY = 5.0  # seconds into a round before spares for the next one start importing
# What a PyTorch DDP script imports on its way to the first step (torch alone leaves ~1.5 s of it,
# mostly torch._dynamo, which DDP and torch.optim import on first use).
DEFAULT_PRELOAD = ("torch", "torch.distributed", "torch.nn.parallel", "torch.optim", "torch._dynamo")

# Runs in the spare: import, wait for the round, become the worker. No caldera import: it must
# work with any interpreter that can run the user's script.
ZYGOTE = """\
import json, os, runpy, sys
for name in json.loads(sys.argv[1]):
    try:
        __import__(name)
    except Exception:
        pass
line = sys.stdin.readline()
if not line:
    os._exit(0)
job = json.loads(line)
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
os.environ.clear()
os.environ.update(job["env"])
sys.argv = job["argv"]
if job["module"]:
    sys.path[0] = os.getcwd()
    runpy.run_module(job["module"], run_name="__main__", alter_sys=True)
else:
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


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
    """Up to `size` warm spares for `command` (none if it has no warm form or nothing is preloaded)."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str], preload: Sequence[str], size: int) -> None:
        self.form = warm_form(command) if preload else None
        self.env = dict(env)
        self.preload = list(preload)
        self.size = size
        self._delay = REFILL_DELAY
        self._ready: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._wanted = threading.Event()  # a refill was asked for
        self._closed = threading.Event()
        self._spawner: threading.Thread | None = None

    def fill(self) -> None:
        """Start spares until `size` are waiting.

        Called from a thread that lives as long as the launcher (its main thread, or the
        spawner): PR_SET_PDEATHSIG fires when the thread that started the process ends."""
        with self._lock:
            if self.form is None or self._closed.is_set():
                return
            self._ready = [p for p in self._ready if p.poll() is None]
            while len(self._ready) < self.size:
                argv = shimmed([self.form[0], "-c", ZYGOTE, json.dumps(self.preload)])
                try:
                    proc = subprocess.Popen(argv, env=self.env, stdin=subprocess.PIPE, start_new_session=True)
                except OSError:
                    self.form = None  # cannot start one: every worker starts cold
                    return
                self._ready.append(proc)

    def refill_later(self, delay: float = REFILL_DELAY) -> None:
        """Fill again `delay` seconds from now, on the spawner thread (asking again restarts the wait)."""
        if self.form is None:
            return
        self._delay = delay
        self._wanted.set()
        if self._spawner is None:
            self._spawner = threading.Thread(target=self._spawn, name="caldera-spares", daemon=True)
            self._spawner.start()

    def _spawn(self) -> None:
        while not self._closed.is_set():
            self._wanted.wait()
            while self._wanted.is_set() and not self._closed.is_set():
                self._wanted.clear()
                if self._closed.wait(self._delay):
                    return
            self.fill()

    def start(self, env: Mapping[str, str]) -> subprocess.Popen[bytes] | None:
        """A waiting spare turned into the worker with `env`; None when none is ready (start it cold)."""
        if self.form is None:
            return None
        while True:
            with self._lock:
                if not self._ready:
                    return None
                proc = self._ready.pop(0)
            if proc.poll() is not None or proc.stdin is None:
                continue
            _, module, argv = self.form
            try:
                proc.stdin.write((json.dumps({"env": dict(env), "argv": argv, "module": module}) + "\n").encode())
                proc.stdin.close()
            except OSError:  # it died meanwhile
                continue
            return proc

    def waiting(self) -> int:
        """How many spares are alive and not yet taken."""
        with self._lock:
            return sum(p.poll() is None for p in self._ready)

    def close(self) -> None:
        self._closed.set()
        self._wanted.set()
        with self._lock:
            ready, self._ready = self._ready, []
        for proc in ready:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            proc.wait()
