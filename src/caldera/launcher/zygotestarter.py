"""The node's zygote starter: runs the zygotes its pods' launchers ask for, outside every pod.

A zygote started by a launcher is a process of the launcher's pod, and a pod's processes end
with it (the local executor's shim kills its whole tree, as a container's end does). The zygote
a node's pods share must outlive each of them, so the node's runtime runs it: the runtime owns a
starter, whose socket name it gives every elastic pod (`zygote.STARTER_VAR`). A launcher that
finds no zygote for its key binds the zygote's socket itself (so two launchers never start two)
and hands the bound socket to the starter with the interpreter, the preload list and the import
variables; the starter runs `zygote.PROGRAM` on it in a session of its own and answers "started".
Only peers of the starter's own uid are served, and only the zygote program is ever run.

The runtime stops the zygotes when no elastic pod runs and no job that started one is left
(`stop_zygotes`, system/zygoteusers.py), and when it stops its pods (`close`: those of an earlier
starter on the same name too, found by the name in their environment). A zygote also exits after `IDLE_EXIT` seconds without a client (the
runtime may stop without stopping its pods, and a later one adopts the pods, not the zygote).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import threading

from caldera.launcher.zygote import PROGRAM, STARTER_VAR, zygote_argv

IDLE_EXIT = 10.0  # seconds a node's zygote waits without a client before it exits (one its runtime forgot)


class ZygoteStarter:
    """Serves `name` (an abstract socket name) on a thread until `close`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock.bind(b"\0" + name.encode())  # OSError if taken: the caller goes on without one
        self._sock.listen(16)
        self._lock = threading.Lock()
        self._started: list[subprocess.Popen[bytes]] = []
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="caldera-zygote-starter", daemon=True)
        self._thread.start()

    def zygotes(self) -> list[int]:
        """The pids of the zygotes it started that still run."""
        with self._lock:
            self._started = [p for p in self._started if p.poll() is None]
            return [p.pid for p in self._started]

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            with conn:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        if struct.unpack("3i", creds)[1] != os.getuid():
            return
        conn.settimeout(5.0)
        fds: list[int] = []
        try:
            data, ancillary, _, _ = conn.recvmsg(1 << 20, socket.CMSG_SPACE(4))
            for level, kind, raw in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds += struct.unpack(f"{len(raw) // 4}i", raw[: len(raw) - len(raw) % 4])
            request = json.loads(data)
            interpreter, preload, env = request["interpreter"], request["preload"], request["env"]
            valid = (
                len(fds) == 1
                and isinstance(interpreter, str)
                and os.path.isabs(interpreter)
                and isinstance(preload, list)
                and all(isinstance(m, str) for m in preload)
                and isinstance(env, dict)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
            )
            if not valid:
                return
            with self._lock:
                if self._closed:
                    return
                proc = subprocess.Popen(
                    zygote_argv(interpreter, preload, fds[0], IDLE_EXIT),
                    env={**env, STARTER_VAR: self.name},  # how `close` finds it, after a restart too
                    cwd="/",
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    pass_fds=(fds[0],),
                    start_new_session=True,
                )
                self._started = [p for p in self._started if p.poll() is None] + [proc]
            conn.send(b"started")
        except (OSError, ValueError, KeyError, TypeError):
            return
        finally:
            for fd in fds:
                os.close(fd)

    def stop_zygotes(self) -> None:
        """SIGKILL the zygotes it started (their spares die with them); it goes on serving."""
        with self._lock:
            started, self._started = self._started, []
        for proc in started:
            proc.kill()
        for proc in started:
            proc.wait()

    def close(self, stop_zygotes: bool = True) -> None:
        """Stop serving; with `stop_zygotes`, SIGKILL every zygote started under this name, by this starter
        or by one before it (a daemon killed, then started again on the same home), and their spares."""
        with self._lock:
            self._closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._thread.join()
        if stop_zygotes:
            self.stop_zygotes()
            for pid in started_as(self.name):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)


def started_as(name: str) -> list[int]:
    """The live processes of the zygotes started under `name` and of the spares they forked (from /proc)."""
    marker, program = f"{STARTER_VAR}={name}".encode(), PROGRAM.encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                if marker not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                if program in f.read().split(b"\0"):
                    found.append(int(entry.name))
        except OSError:
            continue
    return found
