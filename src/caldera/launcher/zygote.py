"""A zygote: one process that imported the preload modules once and forks a warm spare on request.

A spare that imports torch itself costs 2–3 s of CPU, and the spares refilled behind a round
import while that round starts, on the same CPUs. A fork of a process that has already
imported costs milliseconds and shares the imported pages with it (copy on write). So the
launcher asks a zygote for its spares, and starts spares the old way (`spares.py`) only when
no zygote can be reached.

Where the zygote lives:

- **The node's**, when the runtime gives the pod a zygote starter (`STARTER_VAR`; the embedded
  cluster does, one per machine): a zygote per interpreter, preload list and import variables
  (`IMPORT_VARS`: not the pod's own, so pods share it; its socket's name is a hash of them), run by
  the starter outside every pod (`zygotestarter.py`), so it outlives the pod that asked first. A pod
  re-created after a fault, or one added by a scale-out, forks its first spares from it instead of
  importing torch: that import was the recovery's critical path. The first launcher that finds
  none binds its socket and hands it to the starter; until the import is done, forks wait in the
  socket's backlog. If the starter does not answer, the launcher runs the zygote itself.
- **The launcher's** otherwise (a launcher on its own host): its child (the same PDEATHSIG shim as
  the workers), gone with it. Refills are still forks, but a new launcher imports once.

The protocol, over a Unix SOCK_SEQPACKET socket in the abstract namespace (no file to clean up,
no path length limit; the zygote accepts only peers of its own uid): one connection per spare.
The client sends one message: a JSON object {"cwd", "env"} with three descriptors (the spare's
stdin, a pipe the round's job will come on, then its stdout and stderr). The zygote forks; the
child starts a session of its own (it is the worker's process group, as a cold worker is),
sets PR_SET_PDEATHSIG (it dies with the zygote), takes the descriptors and the environment,
then waits for the round's job and runs it as a cold spare does (`READ_JOB`, `RUN_JOB`). The
zygote answers "pid N" once the child leads its group, and "exit S" (a wait status) when it ends. When the client's end closes (the launcher died, or
closed the spare), the zygote SIGKILLs the child's group, so a worker never outlives its
launcher, as with PDEATHSIG.

Fork safety: the zygote forks from its one thread. With the spares' OMP_NUM_THREADS=1 default,
importing torch starts no thread; with more, numpy's OpenBLAS starts its thread server, which
shuts itself down around a fork (its pthread_atfork handler). torch's intra-op pool starts at
the first parallel operation and gloo at `init_process_group`: neither happens in the zygote.
"""

from __future__ import annotations

import array
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import uuid
from collections.abc import Mapping, Sequence

from caldera.launcher.workers import shimmed

STARTER_VAR = "CALDERA_ZYGOTE_STARTER"  # set by the runtime: its zygote starter's socket name (see above)
STARTER_TIMEOUT = 5.0  # seconds to wait for the starter's answer before the launcher starts its own zygote
# The variables that shape what an import does; only these are the zygote's, and they are its key.
IMPORT_VARS = ("PATH", "HOME", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "LD_PRELOAD")
IMPORT_PREFIXES = ("PYTHON", "OMP_", "MKL_", "OPENBLAS_", "KMP_", "GOMP_", "TORCH")

# A spare's end, shared by forked and cold spares: wait for the round's job on stdin, then become the worker.
READ_JOB = """\
line = sys.stdin.readline()
if not line:
    os._exit(0)
job = json.loads(line)
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
"""
RUN_JOB = """\
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

# Import `names` (one failing is skipped) with the cyclic collector off, then freeze what was imported out of its
# reach: shared by the zygote and the cold spares (spares.py), whose programs cannot import caldera.
IMPORT_ALL = """\
def import_all(names):
    gc.disable()
    for name in names:
        try:
            __import__(name)
        except Exception:
            pass
    gc.freeze()
    gc.enable()
"""

# The zygote: import, then serve forks; a forked child leaves `serve` and runs the job. No caldera
# import (any interpreter that runs the user's script).
_SERVE = """\
import ctypes, gc, json, os, runpy, select, signal, socket, struct, sys, time
listener = socket.socket(fileno=int(sys.argv[1]))
preload, idle_exit = json.loads(sys.argv[2]), float(sys.argv[3])
os.chdir("/")
if sys.path and sys.path[0] == "":
    del sys.path[0]
import_all(preload)
me, uid, prctl = os.getpid(), os.getuid(), ctypes.CDLL(None, use_errno=True).prctl
wake_r, wake_w = os.pipe()
os.set_blocking(wake_r, False)
os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w)
signal.signal(signal.SIGCHLD, lambda *_: None)
clients, children = {}, {}
def drop(conn):
    pid = clients.pop(conn)
    conn.close()
    if pid in children:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
def fork(conn):
    try:
        data, anc, _, _ = conn.recvmsg(1 << 20, socket.CMSG_SPACE(3 * 4))
        fds = [fd for level, kind, raw in anc if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS
               for fd in struct.unpack("%di" % (len(raw) // 4), raw[: len(raw) - len(raw) % 4])]
        request = json.loads(data)
    except (OSError, ValueError):
        conn.close()
        return None
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        conn.close()
        return None
    led_r, led_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        prctl(1, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != me:
            os._exit(137)
        os.write(led_w, b"1")  # it leads its group now: a kill of the group reaches it
        os.close(led_w)
        os.close(led_r)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        for other in [listener, conn, *clients]:
            other.close()
        os.close(wake_r)
        os.close(wake_w)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path.insert(0, "")  # where `python -c` has the working directory (a spare's is the job's)
        return request
    for fd in fds:
        os.close(fd)
    os.close(led_w)
    os.read(led_r, 1)  # the pid goes out once the child leads its group (or has died)
    os.close(led_r)
    clients[conn] = pid
    children[pid] = conn
    try:
        conn.send(b"pid %d" % pid)
    except OSError:
        drop(conn)
    return None
def serve():
    quiet_since = time.monotonic()
    while True:
        timeout = None
        if idle_exit > 0 and not clients and not children:
            timeout = max(0.0, quiet_since + idle_exit - time.monotonic())
        ready = select.select([listener, wake_r, *clients], [], [], timeout)[0]
        if not ready:
            sys.exit(0)
        if wake_r in ready:
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
            while children:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                conn = children.pop(pid, None)
                if conn is not None and conn in clients:
                    try:
                        conn.send(b"exit %d" % status)
                    except OSError:
                        pass
                    clients.pop(conn)
                    conn.close()
            quiet_since = time.monotonic()
        for conn in [c for c in ready if c in clients]:
            try:
                gone = not conn.recv(64)
            except OSError:
                gone = True
            if gone:
                drop(conn)
                quiet_since = time.monotonic()
        if listener in ready:
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            if struct.unpack("3i", creds)[1] != uid:
                conn.close()
                continue
            request = fork(conn)
            if request is not None:
                return request
serve()
"""
PROGRAM = IMPORT_ALL + _SERVE + READ_JOB + RUN_JOB


def zygote_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of `env` a zygote is started with (and keyed by): those that shape an import."""
    return {k: v for k, v in env.items() if k in IMPORT_VARS or k.startswith(IMPORT_PREFIXES)}


class Forked:
    """A spare forked by a zygote, as the launcher sees it: the part of `subprocess.Popen` it uses.

    The process is the zygote's child, so its pid and exit status come over the connection
    (a thread reads them); `stdin` is the pipe the round's job is written to."""

    def __init__(self, conn: socket.socket, job: int, zygote: Zygote) -> None:
        self._conn = conn
        self._zygote = zygote
        self.stdin = os.fdopen(job, "wb")
        self._pid: int | None = None
        self.returncode: int | None = None
        self._known = threading.Event()
        self._ended = threading.Event()
        threading.Thread(target=self._read, name="caldera-forked", daemon=True).start()

    def _read(self) -> None:
        status: int | None = None
        try:
            while True:
                message = self._conn.recv(64)
                if not message:
                    break
                kind, _, value = message.decode().partition(" ")
                if kind == "pid":
                    self._pid = int(value)
                    self._known.set()
                elif kind == "exit":
                    status = int(value)
                    break
        except (OSError, ValueError):
            pass
        # No status: the zygote died (its children die with it, PR_SET_PDEATHSIG) or refused us.
        if self._pid is None:
            self._zygote.broken = True  # before forking this one: the next spares start cold
        self.returncode = -signal.SIGKILL if status is None else os.waitstatus_to_exitcode(status)
        self._known.set()
        self._ended.set()
        with contextlib.suppress(OSError):
            self._conn.close()

    @property
    def pid(self) -> int:
        """The process id (waits for the zygote's fork: at most its import, when it has just started); 0 if none."""
        self._known.wait()
        return self._pid or 0

    def forked(self) -> bool:
        """Whether the zygote has forked it (a spare that can start at once)."""
        return self._pid is not None

    def poll(self) -> int | None:
        return self.returncode if self._ended.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired("forked spare", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def close(self) -> None:
        """Give the spare up: the zygote kills it (it also reads EOF on its job pipe)."""
        with contextlib.suppress(OSError):
            self.stdin.close()
        with contextlib.suppress(OSError):
            self._conn.shutdown(socket.SHUT_RDWR)


class Zygote:
    """The launcher's way to its zygote: `fork` asks for a spare; `open_zygote` finds or starts one."""

    def __init__(self, name: bytes, owned: subprocess.Popen[bytes] | None, shared: bool) -> None:
        self.name = name
        self.shared = shared  # the node's zygote, started by the runtime's starter (not this launcher's child)
        self._owned = owned  # the zygote process, when this launcher started it
        self.broken = False

    def fork(self, cwd: str, env: Mapping[str, str]) -> Forked | None:
        """A spare forked in `cwd` with `env` (its stdout and stderr are ours); None if the zygote is out of reach."""
        if self.broken:
            return None
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        stdin_r, stdin_w = os.pipe()  # the spare reads the round's job from its stdin, as a cold spare does
        try:
            conn.connect(self.name)
            payload = json.dumps({"cwd": cwd, "env": dict(env)}).encode()
            fds = array.array("i", [stdin_r, 1, 2])
            conn.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())])
        except OSError:
            conn.close()
            os.close(stdin_w)
            self.broken = True
            return None
        finally:
            os.close(stdin_r)
        return Forked(conn, stdin_w, self)

    def close(self) -> None:
        """Stop the zygote if this launcher started it (the node's stays for the node's other pods)."""
        if self._owned is not None:
            self._owned.kill()
            self._owned.wait()


def _socket_name(scope: str, interpreter: str, preload: Sequence[str], env: Mapping[str, str]) -> bytes:
    key = json.dumps([scope, interpreter, list(preload), sorted(env.items())])
    return b"\0caldera-zygote-" + hashlib.sha256(key.encode()).hexdigest()[:32].encode()


def zygote_argv(interpreter: str, preload: Sequence[str], listener: int, idle_exit: float) -> list[str]:
    """The command of a zygote serving on the listening socket `listener` (an inherited descriptor)."""
    return [interpreter, "-c", PROGRAM, str(listener), json.dumps(list(preload)), str(idle_exit)]


def open_zygote(interpreter: str, preload: Sequence[str], env: Mapping[str, str]) -> Zygote | None:
    """The node's zygote for `interpreter` and `preload` (started now if there is none); None if none can run.

    Returns at once: the zygote imports in the background, and the forks asked meanwhile wait for it."""
    path = shutil.which(interpreter, path=env.get("PATH"))
    if path is None or not preload:
        return None
    base = zygote_env(env)
    starter = env.get(STARTER_VAR, "")
    name = _socket_name(starter, path, preload, base) if starter else b"\0caldera-zygote-" + uuid.uuid4().hex.encode()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        listener.bind(name)
    except OSError:  # taken: the node's zygote runs already
        listener.close()
        return Zygote(name, None, shared=True) if starter else None
    try:
        listener.listen(64)
        if starter and ask_starter(starter, path, preload, base, listener.fileno()):
            return Zygote(name, None, shared=True)
        argv = zygote_argv(path, preload, listener.fileno(), 0.0)
        proc = subprocess.Popen(
            shimmed(argv), env=base, cwd="/", stdin=subprocess.DEVNULL, pass_fds=(listener.fileno(),),
            start_new_session=True,
        )  # fmt: skip
    except OSError:
        return None
    finally:
        listener.close()
    return Zygote(name, proc, shared=False)


def ask_starter(starter: str, interpreter: str, preload: Sequence[str], env: Mapping[str, str], listener: int) -> bool:
    """Have the node's starter (`zygotestarter.py`) run the zygote on `listener`; False if it did not."""
    request = json.dumps({"interpreter": interpreter, "preload": list(preload), "env": dict(env)}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
        conn.settimeout(STARTER_TIMEOUT)
        try:
            conn.connect(b"\0" + starter.encode())
            fds = array.array("i", [listener])
            conn.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())])
            return conn.recv(16) == b"started"
        except OSError:
            return False
