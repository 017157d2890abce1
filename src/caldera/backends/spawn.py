"""How a pod's shim is started: which program (`shim_command`), and the start itself without holding the
interpreter (`spawn`: posix_spawn(3) called through ctypes).

CPython's `os.posix_spawn` keeps the GIL while the C library waits for the child to exec
(glibc spawns with CLONE_VFORK: the parent sleeps until then). On a busy machine the child may
wait ~20 ms for a CPU, and every thread of the daemon waits with it: its HTTP server, its
control loop. A foreign call through ctypes releases the GIL, so here only the calling thread
(the starter) waits. Where the C library cannot be loaded, `os.posix_spawn` does the same
thing with the GIL held.

Only what the local executor asks for: a new session, a signal mask, every signal's default
action restored, stdin from a descriptor, stdout appended to a file and stderr a copy of it, an
empty environment.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from caldera.backends import shim

NATIVE_SHIM = Path(sys.executable).parent / "caldera-shim"  # shim.c, built by `make` into the venv
NATIVE_SHIM_SOURCE = NATIVE_SHIM.with_name("caldera-shim.sha256")  # the SHA-256 of the shim.c it was built from
SHIM_VAR = "CALDERA_SHIM"  # "python": run shim.py even where the C shim is built (tests of both)
_log = logging.getLogger(__name__)

# glibc's flags (spawn.h)
_SETSIGDEF = 0x04
_SETSIGMASK = 0x08
_SETSID = 0x80
_OPAQUE = 1024  # bytes for posix_spawnattr_t (336 on x86-64 glibc) and posix_spawn_file_actions_t (80)
_SIGSET = 128  # sizeof(sigset_t) on Linux


def shim_command() -> list[str]:
    """How a pod's shim is run: the C shim (`shim.c`) where it was built from the current source, else
    shim.py (same behaviour, ~60 ms more CPU per start); $CALDERA_SHIM=python asks for shim.py.

    "The current source" is by content: `make` writes the SHA-256 of the shim.c it built beside the
    binary (NATIVE_SHIM_SOURCE), so a fresh clone of the same source, newer by its time stamps, uses it."""
    python = [sys.executable, "-I", "-S", shim.__file__]
    if os.environ.get(SHIM_VAR) == "python" or not os.access(NATIVE_SHIM, os.X_OK):
        return python
    source = Path(shim.__file__).with_suffix(".c")
    with contextlib.suppress(OSError):  # an install without the source: the binary is what was built
        current = hashlib.sha256(source.read_bytes()).hexdigest()
        try:
            built = NATIVE_SHIM_SOURCE.read_text().strip()
        except OSError:
            built = ""
        if built != current:
            _log.warning("%s was not built from this %s (run make): pods use shim.py", NATIVE_SHIM, source)
            return python
    return [str(NATIVE_SHIM)]


@cache
def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.posix_spawn.restype = ctypes.c_int
        return libc if hasattr(libc, "posix_spawnattr_setsigdefault") else None
    except (OSError, AttributeError):
        return None


def spawn(
    path: str, argv: Sequence[str], *, stdin: int, log: str, blocked: Sequence[int], defaults: frozenset[int]
) -> int:
    """Start `path` with `argv` and no environment in a new session; its pid. OSError if it could not be.

    Its stdin is a copy of `stdin`, its stdout `log` opened for appending (created if need be), its
    stderr the same; `blocked` signals are blocked, every signal in `defaults` has its default action."""
    libc = _libc()
    if libc is None:
        return spawn_holding_the_gil(path, argv, stdin=stdin, log=log, blocked=blocked, defaults=defaults)
    actions = ctypes.create_string_buffer(_OPAQUE)
    attr = ctypes.create_string_buffer(_OPAQUE)
    mask = ctypes.create_string_buffer(_SIGSET)
    dfl = ctypes.create_string_buffer(_SIGSET)
    _check(libc.posix_spawn_file_actions_init(actions))
    _check(libc.posix_spawnattr_init(attr))
    try:
        _check(libc.posix_spawn_file_actions_adddup2(actions, stdin, 0))
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        _check(libc.posix_spawn_file_actions_addopen(actions, 1, os.fsencode(log), flags, 0o644))
        _check(libc.posix_spawn_file_actions_adddup2(actions, 1, 2))
        libc.sigemptyset(mask)
        for sig in blocked:
            libc.sigaddset(mask, int(sig))
        libc.sigemptyset(dfl)
        for sig in defaults:
            libc.sigaddset(dfl, int(sig))  # the C library's own signals are refused: they keep theirs
        _check(libc.posix_spawnattr_setsigmask(attr, mask))
        _check(libc.posix_spawnattr_setsigdefault(attr, dfl))
        _check(libc.posix_spawnattr_setflags(attr, ctypes.c_short(_SETSID | _SETSIGMASK | _SETSIGDEF)))
        words = [os.fsencode(a) for a in argv]
        c_argv = (ctypes.c_char_p * (len(words) + 1))(*words, None)
        c_env = (ctypes.c_char_p * 1)(None)
        pid = ctypes.c_int(0)
        _check(libc.posix_spawn(ctypes.byref(pid), os.fsencode(path), actions, attr, c_argv, c_env))
        return pid.value
    finally:
        libc.posix_spawn_file_actions_destroy(actions)
        libc.posix_spawnattr_destroy(attr)


def spawn_holding_the_gil(
    path: str, argv: Sequence[str], *, stdin: int, log: str, blocked: Sequence[int], defaults: frozenset[int]
) -> int:
    """`spawn` by `os.posix_spawn`: the same start, every thread of the process waiting for it."""
    return os.posix_spawn(
        path,
        list(argv),
        {},
        file_actions=[
            (os.POSIX_SPAWN_DUP2, stdin, 0),
            (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ],
        setsid=True,
        setsigmask=blocked,
        setsigdef=defaults,
    )


def _check(code: int) -> None:
    """posix_spawn's functions return the error number (they do not set errno)."""
    if code:
        raise OSError(code, os.strerror(code))
