"""The shim: leader of a pod's process group, between the local executor and the user's command.

The executor runs it as ``python -I shim.py POD_DIR ATTEMPT -- ARGV...`` in a new session, with
stdin a pipe from the executor (the *gate*) and stdout/stderr appended to the pod's log. It

1. waits at the gate for one JSON document ``{"env": {...}, "cwd": "..."}``; the executor sends it
   only after proc.json is on disk, so EOF without it (the executor died or failed) starts nothing;
2. starts ARGV as its child, in its own process group, with exactly that environment, its
   stdout and stderr a pipe that the shim copies to the log unchanged, noting in
   ``POD_DIR/log.times`` when lines began (``OFFSET SECONDS`` a line: for each read, the log
   offset of the first line it starts and the time it was read; the lines after it in that
   read share the time), which `logs --timestamps` and `--since` read;
3. forwards SIGTERM/SIGINT to the group and waits for the child;
4. kills what is left of the group (as Kubernetes does when a container's main process ends), then
   every process still below it (one that left the group with setsid is still its descendant: it
   is a child subreaper, so orphans come back to it), and reaps them;
5. records the outcome atomically in ``POD_DIR/exit``: ``{"exit_code", "attempt", "finished_at"}``,
   a death by signal N being 128+N as in a shell (137 for SIGKILL).

Invariants: a user command runs only after its proc.json exists; an ``exit`` file for an attempt
exists only once every other process of the group is gone, so it means the pod is over.

It imports only the standard library and is run by path in isolated mode without site (-I -S),
so the pod's environment (PYTHONPATH, PYTHONHOME, ...) can neither break nor hijack it and caldera
need not be importable from the interpreter. For the same reason the on-disk formats the executor
shares with it live here, and the /proc helpers in `procfs.py`, which it imports from beside it.

Where `make` built it, pods run the same program in C (`shim.c`, `caldera-shim`) instead: this one is
the fallback, and the reference both are tested against.

Every pod pays for the shim's start-up, so it imports only modules the interpreter has built in
or nearly (`_signal`, not `signal`, which imports enum; no json, subprocess, pathlib, dataclasses,
contextlib): about 30 ms of CPU instead of 120. The start order comes as NUL-separated bytes
(`encode_order`) and the exit record is written by hand, both simple enough not to need json.
"""

from __future__ import annotations

import os
import select
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    import signal
    from collections.abc import Mapping
    from pathlib import Path
    from types import FrameType
else:
    import _signal as signal  # the C module behind `signal`: the same functions and numbers, no enum

EXIT_FILE = "exit"
UNSTARTED_FILE = "unstarted"  # the attempt whose gate closed with no order: nothing of it ran
LOG = "log"  # the pod's log, the shim's stdout (`process.LOG_FILE`)
TIMES_FILE = "log.times"  # "OFFSET SECONDS\n": a line of the log starting there, and the lines after it, came then
FORWARDED = (signal.SIGTERM, signal.SIGINT)
PYTHON_IGNORES = (signal.SIGPIPE, signal.SIGXFSZ)  # ignored by the interpreter at start-up: not by the command
errno_ENOENT = 2  # errno.ENOENT, without importing errno (Linux's number)

if TYPE_CHECKING or __name__ != "__main__":
    from caldera.backends.procfs import exit_code_of, kill_group, kill_tree
else:  # run by path (-I -S): caldera need not be importable; procfs.py is beside this file
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # appended: never shadows the standard library
    from procfs import exit_code_of, kill_group, kill_tree


def write_atomic(path: str | Path, text: str) -> None:
    """Replace `path` with `text` so that a reader sees the old or the new content, never a part."""
    where, name = os.path.split(os.fspath(path))
    tmp = os.path.join(where, f".{name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_json_atomic(path: str | Path, data: dict[str, object]) -> None:
    """`write_atomic` of a JSON document (for the executor: the shim itself does without json)."""
    import json

    write_atomic(path, json.dumps(data) + "\n")


def read_json(path: str | Path) -> dict[str, object] | None:
    import json

    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def encode_order(env: Mapping[str, str], cwd: str) -> bytes:
    """The start order the executor sends through the gate: the working directory, then NAME=VALUE
    for each variable, NUL-separated (neither may hold a NUL: the kernel's execve forbids it)."""
    return b"\0".join([os.fsencode(cwd), *(os.fsencode(f"{k}={v}") for k, v in env.items())])


def decode_order(raw: bytes) -> tuple[bytes, dict[bytes, bytes]] | None:
    """The working directory and environment of an order; None if `raw` is none (EOF: nothing recorded)."""
    if not raw:
        return None
    cwd, *variables = raw.split(b"\0")
    env = {}
    for variable in variables:
        name, eq, value = variable.partition(b"=")
        if not eq or not name:
            return None
        env[name] = value
    return cwd, env


class _Forwarder:
    """Signal handler: pass SIGTERM/SIGINT on to the whole group, at most once per signal received."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.spawning = False  # while the child is being created, a signal is held and sent after
        self.held: int | None = None

    def __call__(self, sig: int, frame: FrameType | None) -> None:
        self.received = sig
        if self.spawning:
            self.held = sig
        else:
            self.forward(sig)

    def forward(self, sig: int) -> None:
        # Our own copy is discarded while ignored; handling it would forward it again, forever.
        signal.signal(sig, signal.SIG_IGN)
        try:
            os.killpg(0, sig)
        finally:
            signal.signal(sig, self)


def _become_subreaper() -> None:
    import ctypes

    pr_set_child_subreaper = 36
    # Best effort: without it, orphans go to init, which reaps them on an ordinary system.
    try:  # noqa: SIM105 (no contextlib here: see the module docstring)
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class _LogCopier:
    """Copies the child's output from a pipe to the log (fd 1), noting in `TIMES_FILE` when lines began."""

    def __init__(self, pod_dir: str) -> None:
        self.reader, self.writer = os.pipe()
        self._writer_open = True
        self._times = open(os.path.join(pod_dir, TIMES_FILE), "a")  # noqa: SIM115 (open for the life of the attempt)
        self._at_line_start = _ends_a_line(os.path.join(pod_dir, LOG))

    def close_writer(self) -> None:
        """Give up the shim's own writing end: once the group's are gone too, the pipe ends."""
        if self._writer_open:
            os.close(self.writer)
            self._writer_open = False

    def pump(self, child_fd: int) -> None:
        """Copy until the child exits (its pidfd becomes readable) or the pipe has no writer left."""
        poller = select.poll()
        poller.register(self.reader, select.POLLIN)
        poller.register(child_fd, select.POLLIN)
        while True:
            for fd, _ in poller.poll():
                if fd == child_fd or not self._read():
                    return

    def drain(self) -> None:
        """Copy what is in the pipe once the group was killed, then close.

        Without waiting: a process that left the group (setsid) may hold a writer for ever."""
        self.close_writer()
        os.set_blocking(self.reader, False)
        try:
            while self._read():
                pass
        except BlockingIOError:
            pass
        os.close(self.reader)
        self._times.close()

    def _read(self) -> bool:
        data = os.read(self.reader, 65536)
        if not data:
            return False
        offset = os.fstat(1).st_size  # O_APPEND: this write lands at the end
        # The shim runs apart from caldera (see the module docstring), so it reads the wall clock itself.
        now = time.time()  # noqa: TID251
        # One note a read: where its first new line starts. The lines after it in the same read
        # were read at the same moment, and a reader gives a line the last note at or before it.
        first = 0 if self._at_line_start else data.find(b"\n") + 1
        if 0 < first < len(data) or (first == 0 and self._at_line_start):
            self._times.write(f"{offset + first} {now:.6f}\n")
            self._times.flush()  # before the data: a reader never sees a line without its time
        os.write(1, data)
        self._at_line_start = data.endswith(b"\n")
        return True


def _ends_a_line(path: str) -> bool:
    """Whether the file is empty (or absent) or ends with a newline: its next byte starts a line."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            return size == 0 or (f.seek(size - 1), f.read(1))[1] == b"\n"
    except OSError:
        return True


def _run(argv: list[str], cwd: bytes, env: dict[bytes, bytes], fwd: _Forwarder, log: _LogCopier) -> int:
    # A signal handled before the fork would reach an empty group, and one handled after it by the
    # handler and again here would arrive twice: from now until the child exists, signals are held.
    fwd.spawning = True
    if fwd.received is not None:
        return 128 + fwd.received  # stopped before it started
    try:
        pid = _spawn(argv, cwd, env, log.writer)
    except OSError as e:
        fwd.spawning = False
        missing = e.errno == errno_ENOENT
        where = os.fsdecode(cwd)
        print(f"caldera: cannot start {argv[0]!r} in {where!r}: {e.strerror}", file=sys.stderr, flush=True)
        return 127 if missing else 126
    finally:
        log.close_writer()  # the child's are the writers left: their end is the pipe's end
    fwd.spawning = False
    if fwd.held is not None:
        fwd.forward(fwd.held)
    pidfd = os.pidfd_open(pid)
    try:
        log.pump(pidfd)
    finally:
        os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    return exit_code_of(status)


def _spawn(argv: list[str], cwd: bytes, env: dict[bytes, bytes], out: int) -> int:
    """Start `argv` as our child, in our process group, in `cwd` with exactly `env`, stdin from
    /dev/null, stdout and stderr to `out`; its pid. OSError (as the child met it) if it could not.

    What subprocess.Popen does, without importing it. Every descriptor we hold but `out` is
    close-on-exec (Python opens them so); `out` is given to the child as 1 and 2 only."""
    failed_r, failed_w = os.pipe()  # close-on-exec: EOF without a word means the exec succeeded
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)  # our handlers must not run in the child
    try:
        pid = os.fork()
        if pid == 0:
            try:
                for sig in (*FORWARDED, *PYTHON_IGNORES):
                    signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
                os.chdir(cwd)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(out, 1)
                os.dup2(out, 2)
                os.execvpe(argv[0], argv, env)
            except OSError as e:
                os.write(failed_w, str(e.errno or 0).encode())
            finally:
                os._exit(127)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    os.close(failed_w)
    with open(failed_r, "rb") as failed:
        word = failed.read()
    if word:
        os.waitpid(pid, 0)
        code = int(word)
        raise OSError(code, os.strerror(code))
    return pid


def _reap_children() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(args: list[str]) -> int:
    if len(args) < 4 or args[2] != "--":
        print("usage: shim.py POD_DIR ATTEMPT -- ARGV...", file=sys.stderr)
        return 2
    pod_dir, attempt, argv = args[0], int(args[1]), args[3:]
    os.chdir(pod_dir)  # hold no directory of the daemon's
    fwd = _Forwarder()
    for sig in FORWARDED:
        signal.signal(sig, fwd)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)  # the executor starts us with them blocked
    _become_subreaper()
    with os.fdopen(0, "rb", closefd=False) as gate:
        order = decode_order(gate.read())
    if order is None:  # said before the gate leaves fd 0: an adopter waits while a pipe is there
        print("caldera: not started: the executor did not record this attempt", file=sys.stderr, flush=True)
        write_atomic(os.path.join(pod_dir, UNSTARTED_FILE), f"{attempt}\n")
        return 1
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the gate is done with: a pipe at fd 0 means a shim still at its gate (adopt)
    os.close(devnull)
    log = _LogCopier(pod_dir)
    code = _run(argv, *order, fwd, log)
    kill_group(os.getpgrp(), spare=os.getpid())
    kill_tree(os.getpid())  # what left the group (setsid) but is still below us, the subreaper
    log.drain()
    _reap_children()
    # The shim runs apart from caldera (see the module docstring), so it reads the wall clock itself.
    finished_at = time.time()  # noqa: TID251
    record = f'{{"exit_code": {code}, "attempt": {attempt}, "finished_at": {finished_at!r}}}\n'  # JSON, by hand
    write_atomic(os.path.join(pod_dir, EXIT_FILE), record)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
