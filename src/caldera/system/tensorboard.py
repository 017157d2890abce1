"""TensorBoard for the jobs that ask for one (`caldera submit --tensorboard --logdir D`), as Arena runs it.

A job whose annotation `caldera.dev/tensorboard-logdir` is set gets one process,
`python -m tensorboard.main --logdir DIR --host 127.0.0.1 --port P`, with DIR resolved
against the job's working directory and P a free port. It runs in its own session (a
process group: its data server goes with it); the job's directory `<home>/jobs/<ns>/<job>/`
holds its output (`tensorboard.log`) and what it is (`tensorboard.json`: pid, start
time, port, logdir). It is spawned, not a `Popen`: a daemon that leaves it running
for the next one lets go of nothing that would complain.

Lifetime: started when the job is created; kept after the job ends (people look at
finished runs, as with Arena); stopped when the job is deleted and on `caldera down`.
A daemon that stops without stopping pods leaves it running and the next one adopts it
(the same pid and start time: the same process), or starts it again, on the same port
when that is free. One that died while the daemon runs is started again, at most once
per RESTART_SECONDS. Invariant: at most one TensorBoard per job, and a process is
signalled only while it is provably the one recorded (a pid is not reused while its
group has members).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from caldera.backends.procfs import group_members, kill_group, proc_stat, wait_exited
from caldera.backends.shim import read_json, write_json_atomic
from caldera.core import objects as o
from caldera.system.podpaths import DATA, parse_data, path_map, rewrite
from caldera.system.runtime import HOST, SUBMIT_DIR, PortBook, bindable
from caldera.utils.clock import Clock

LOGDIR = "caldera.dev/tensorboard-logdir"
RECORD = "tensorboard.json"
LOG = "tensorboard.log"
RESTART_SECONDS = 30.0
STOP_GRACE = 5.0
log = logging.getLogger("caldera.tensorboard")


def job_dir(home: Path, namespace: str, name: str) -> Path:
    return home / "jobs" / namespace / name


def logdir_of(job: o.Job) -> Path | None:
    """The directory the job's TensorBoard reads, or None if it asked for none.

    A relative one is relative to the job's working directory: its first container's
    `workingDir` (itself relative to where the job was submitted), else where it was submitted.
    One under an absolute `--data` target reads that data's source (`podpaths.py`)."""
    raw = job.metadata.annotations.get(LOGDIR, "").strip()
    if not raw:
        return None
    mounts = []
    for task in job.spec.tasks:
        with contextlib.suppress(ValueError):  # admission refuses a malformed one
            mounts.extend(parse_data(task.template.annotations.get(DATA, "")))
    path = Path(rewrite(raw, path_map(mounts))).expanduser()
    if path.is_absolute():
        return path
    base = Path(job.metadata.annotations.get(SUBMIT_DIR) or ".")
    containers = job.spec.tasks[0].template.spec.containers if job.spec.tasks else []
    if containers and containers[0].working_dir:
        base = base / containers[0].working_dir  # an absolute workingDir replaces the base
    return (base / path).absolute()


@dataclass(slots=True)
class Board:
    """One job's TensorBoard process."""

    pid: int
    start_ticks: int
    port: int
    logdir: str
    started: float

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def alive(self) -> bool:
        _reap(self.pid)
        st = proc_stat(self.pid)
        if st is not None and st.start_ticks != self.start_ticks:
            return False  # the number was taken again, so our group is empty
        if st is not None and st.live:
            return True
        return bool(group_members(self.pid))  # the leader is gone: is its data server left?


class TensorBoards:
    """The TensorBoards of the jobs of one embedded cluster. Called on its control loop."""

    def __init__(
        self,
        home: Path,
        ports: PortBook,
        clock: Clock,
        notify: Callable[[str, str, str, str], None],
        python: str = sys.executable,
    ) -> None:
        self.home = home
        self.ports = ports
        self.clock = clock
        self.notify = notify  # (namespace, object, reason, message): an event for people
        self.python = python
        self._boards: dict[str, Board] = {}
        self._stopping: dict[str, threading.Thread] = {}

    # ------------------------------------------------------------ what the daemon calls

    def url(self, job_key: str) -> str | None:
        board = self._boards.get(job_key)
        return board.url if board is not None else None

    def ensure(self, job: o.Job) -> None:
        """The job's TensorBoard runs, if it asked for one: adopted if one is recorded and alive, else started."""
        logdir = logdir_of(job)
        if logdir is None or job.key in self._boards:
            return
        where = job_dir(self.home, job.namespace, job.name)
        found = _load(where / RECORD)
        if found is not None and found.alive():
            if found.logdir == str(logdir) and self.ports.claim(found.port):
                self._boards[job.key] = found  # adopted: a daemon before this one started it
                return
            self.stop_recorded(where)  # an earlier job's of the same name
        self._start(job, logdir, preferred=found.port if found is not None else None)

    def check(self, jobs: Mapping[str, o.Job]) -> None:
        """Start again the TensorBoards that died (not more often than every RESTART_SECONDS); `jobs` by key.
        A pass over the boards (a few), not over the jobs: it is made every turn of the loop."""
        now = self.clock.now()
        for key, board in list(self._boards.items()):
            job = jobs.get(key)
            if job is None or now - board.started < RESTART_SECONDS or board.alive():
                continue
            del self._boards[job.key]
            logdir = logdir_of(job)
            if logdir is not None:
                log.warning("TensorBoard of job %s ended; starting it again", job.key)
                self._start(job, logdir, preferred=board.port)

    def stop(self, job_key: str) -> None:
        """Stop the job's TensorBoard (SIGTERM to its group, SIGKILL after STOP_GRACE); returns at once."""
        board = self._boards.pop(job_key, None)
        if board is None:
            return
        self.ports.free(board.port)
        if not board.alive():
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(board.pid, signal.SIGTERM)
        thread = threading.Thread(target=_finish, args=(board,), name=f"caldera-stop-tensorboard {job_key}")
        thread.daemon = True
        self._stopping[job_key] = thread
        thread.start()

    def stopped(self, job_key: str) -> bool:
        """Whether the job has no TensorBoard process left (none, or its stop is complete)."""
        thread = self._stopping.get(job_key)
        if thread is not None and not thread.is_alive():
            del self._stopping[job_key]
            thread = None
        return job_key not in self._boards and thread is None

    def stop_all(self) -> None:
        """`caldera down`: stop every TensorBoard and wait until they are gone."""
        for key in list(self._boards):
            self.stop(key)
        for thread in list(self._stopping.values()):
            thread.join(timeout=STOP_GRACE + 15.0)

    def stop_recorded(self, where: Path) -> None:
        """Stop the TensorBoard recorded in job directory `where` (a job no daemon knows any more)."""
        found = _load(where / RECORD)
        if found is not None and found.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(found.pid, signal.SIGTERM)
            _finish(found)

    # ------------------------------------------------------------ starting

    def _start(self, job: o.Job, logdir: Path, preferred: int | None) -> None:
        where = job_dir(self.home, job.namespace, job.name)
        where.mkdir(parents=True, exist_ok=True)
        port = preferred if preferred is not None and bindable(preferred) and self.ports.claim(preferred) else None
        if port is None:
            port = self.ports.allocate()
        argv = [self.python, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", HOST, "--port", str(port)]
        try:
            pid = os.posix_spawn(
                self.python,
                argv,
                dict(os.environ),
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 1, str(where / LOG), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644),
                    (os.POSIX_SPAWN_DUP2, 1, 2),
                ],
                setsid=True,  # its own group: its data server is stopped with it
            )
        except OSError as e:
            self.ports.free(port)
            self.notify(job.namespace, job.name, "TensorBoardFailed", f"cannot start TensorBoard: {e.strerror or e}")
            return
        st = proc_stat(pid)  # our unreaped child: readable even if it died already
        board = Board(pid, st.start_ticks if st else 0, port, str(logdir), self.clock.now())
        write_json_atomic(
            where / RECORD,
            {"pid": board.pid, "start_ticks": board.start_ticks, "port": port, "logdir": board.logdir},
        )
        self._boards[job.key] = board
        self.notify(job.namespace, job.name, "TensorBoard", f"{board.url} (logdir {logdir})")


def _finish(board: Board) -> None:
    """Wait up to STOP_GRACE for the group to leave after SIGTERM, then SIGKILL what is left."""
    try:
        fd = os.pidfd_open(board.pid)
    except ProcessLookupError:
        fd = None
    if fd is not None:
        try:
            wait_exited([fd], STOP_GRACE)
        finally:
            os.close(fd)
    if group_members(board.pid):
        kill_group(board.pid)
    _reap(board.pid)


def _reap(pid: int) -> None:
    """Reap `pid` if it is a child of this process that ended (one started by an earlier daemon is not)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _load(path: Path) -> Board | None:
    data = read_json(path)
    if not data:
        return None
    try:
        pid, ticks, port = (int(str(data[k])) for k in ("pid", "start_ticks", "port"))
        return Board(pid, ticks, port, str(data["logdir"]), 0.0)
    except (KeyError, ValueError):
        return None
