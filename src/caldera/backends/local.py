"""The local executor: each pod is a process group on this machine, led by the shim (`shim.c`, else `shim.py`).

Invariants:
- a user command runs only once its proc.json is on disk (the shim waits at a gate the executor
  opens after writing it), so whatever happens to the daemon, adopt() finds every pod again;
- "exited" and "stopped" are reported once the pod's process group is gone (no live member);
- an attempt's end is handed out once: by `report` for the pods an executor watches, or by
  adopt() for those that ended while nobody watched; proc.json is retired just before, so no later
  executor hands it out again. (A crash in that instant loses the event, not the outcome: ``exit``
  and the log remain, and the owner can tell from its records which pods it believed running
  that adopt() did not mention.)

The command's environment is `ProcessSpec.env`, exactly (the shim itself runs with none): the
caller renders all of it, GPUs included, as CUDA_VISIBLE_DEVICES.

Threads: one watcher thread polls the shims' pidfds and calls `report` (always from that thread:
`report` should hand the event on and return); stop() starts a short-lived thread that sends
SIGKILL if the group outlives its grace. One executor per home at a time.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from caldera.backends import shim
from caldera.backends.pidcheck import kill_marked, open_same, reap
from caldera.backends.process import (
    DONE_FILE,
    PROC_FILE,
    EventKind,
    Outcome,
    ProcessEvent,
    ProcessSpec,
    ProcRecord,
    check,
    key_of,
    pod_dir,
    prepare,
    retire,
)
from caldera.backends.procfs import (
    exit_code_of,
    kill_group,
    kill_tree,
    proc_stat,
    wait_exited,
)
from caldera.backends.spawn import shim_command, spawn
from caldera.utils.clock import Clock, SystemClock

__all__ = ["EventKind", "LocalExecutor", "ProcessEvent", "ProcessSpec", "pod_dir"]

_POD_SIGNALS_DEFAULT = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}
_log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class _Watch:
    """A running attempt the executor watches. Its mutable fields change under the executor's lock."""

    key: str
    pid: int  # the shim's, also its group's id
    attempt: int
    pidfd: int
    pod_dir: Path
    stopping: bool = False
    grace: float = float("inf")  # the shortest grace asked for so far
    killed: bool = False  # the grace ran out
    done: bool = False


class LocalExecutor:
    """Runs pods as process groups under `home`/pods and reports their ends to `report`.

    `grace` is stop()'s default grace period in seconds; `clock` stamps log headers and the events
    whose time the shim did not record.
    """

    def __init__(
        self,
        home: Path,
        report: Callable[[ProcessEvent], None],
        clock: Clock | None = None,
        grace: float = 30.0,
    ) -> None:
        self.home = Path(os.path.abspath(home))
        self.grace = grace
        self._report = report
        self._clock: Clock = clock or SystemClock()
        self._cond = threading.Condition()
        self._watches: dict[str, _Watch] = {}
        self._starting: set[str] = set()
        self._delivering = 0  # ends taken out of _watches whose report() has not returned yet
        self._closed = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._shim = shim_command()
        self._thread = threading.Thread(target=self._watch_loop, name="caldera-local-executor", daemon=True)
        self._thread.start()

    def run(self, spec: ProcessSpec) -> None:
        """Start `spec` as a new process group; its end will be reported. Raises if the pod runs already."""
        where = check(spec, self.home)
        with self._cond:
            self._check_open()
            if spec.key in self._watches or spec.key in self._starting:
                raise ValueError(f"pod {spec.key} is already running")
            self._starting.add(spec.key)
        watch = None
        try:
            watch = self._start(spec, where)
        finally:
            with self._cond:
                self._starting.discard(spec.key)
                if watch is not None:
                    self._add(watch)

    def stop(self, key: str, grace: float | None = None) -> None:
        """SIGTERM the pod's group, SIGKILL it `grace` seconds later; "stopped" is reported once it is gone.

        Returns at once. Idempotent; a later call with a shorter grace shortens it. Unknown keys are ignored.
        """
        grace = self.grace if grace is None else grace
        with self._cond:
            watch = self._watches.get(key)
            if watch is None or grace >= watch.grace:
                return
            watch.grace = grace
            if not watch.stopping:
                watch.stopping = True
                # The shim passes SIGTERM on to its group; signalling the group from here as well would
                # deliver it twice. The pidfd cannot be closed meanwhile: that happens under this lock.
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(watch.pidfd, signal.SIGTERM)
        threading.Thread(target=self._escalate, args=(watch, grace), name=f"caldera-stop {key}", daemon=True).start()

    def stop_all(self, grace: float | None = None, timeout: float | None = None) -> None:
        """Stop every pod this executor runs; return once all their groups are gone and reported."""
        grace = self.grace if grace is None else grace
        for key in self.running():
            self.stop(key, grace)
        with self._cond:
            done = self._cond.wait_for(
                lambda: self._closed.is_set() or (not self._watches and not self._delivering),
                timeout=grace + 30.0 if timeout is None else timeout,
            )
            self._check_open()
            if not done:
                raise TimeoutError(f"pods still running: {sorted(self._watches)}")

    def running(self) -> list[str]:
        """The keys of the pods this executor watches, stopping ones included."""
        with self._cond:
            return sorted(self._watches)

    def adopt(self) -> list[ProcessEvent]:
        """Take over the pods a previous executor on this home left, even one that was `kill -9`ed.

        One event per pod found: "running" for those alive (now watched: their end will be
        reported), "exited" for those that ended while nobody watched (137 with a note if the shim
        died before recording an exit code). An end already handed out is not returned again.
        """
        events = []
        for proc_path in sorted(self.home.glob(f"pods/*/*/{PROC_FILE}")):
            key = key_of(proc_path.parent)
            with self._cond:
                self._check_open()
                if key in self._watches or key in self._starting:
                    continue
            record = ProcRecord.load(proc_path)
            if record is None:
                _log.warning("pod %s: unreadable %s, left alone", key, proc_path)
                continue
            event = self._adopt_one(key, proc_path.parent, record)
            if event is not None:
                events.append(event)
        return events

    def past(self, key: str, attempt: int) -> ProcessEvent | None:
        """How `attempt` of pod `key` ended, if it ran and its end was handed out already (by a previous
        executor, whose owner may have died before taking note); None if that attempt never started here.

        adopt() does not return these (an end is handed out once); an owner that believed the pod
        running and heard nothing of it from adopt() asks here which of the two it was."""
        where = pod_dir(self.home, key)
        record = ProcRecord.load(where / DONE_FILE)
        if record is None or record.attempt != attempt:
            return None
        outcome = Outcome.load(where, attempt)
        if outcome is None:
            note = "ended without recording an exit code (its shim was killed)"
            return ProcessEvent(key, "exited", 137, attempt, self._clock.now(), note)
        return ProcessEvent(key, "exited", outcome.exit_code, attempt, outcome.finished_at)

    def close(self) -> None:
        """Stop watching, leaving every process running (the daemon may be restarting)."""
        with self._cond:
            if self._closed.is_set():
                return
            self._closed.set()
            self._cond.notify_all()
        self._wake()
        if threading.current_thread() is not self._thread:
            self._thread.join()
        with self._cond:
            for watch in self._watches.values():
                os.close(watch.pidfd)
            self._watches.clear()
        os.close(self._wake_r)
        os.close(self._wake_w)

    # -- starting ----------------------------------------------------------------------------------

    def _start(self, spec: ProcessSpec, where: Path) -> _Watch:
        log = prepare(spec, where, self._clock.now())
        gate_r, gate_w = os.pipe()
        try:
            # In a new session (pid == pgid: the shim leads a group no caldera process belongs to),
            # the gate its stdin, the log its stdout and stderr, with FORWARDED blocked until the
            # shim's handlers are in place: a stop() during its start-up is then handled (recorded,
            # nothing started) rather than killing it before it can record. Whatever the daemon
            # ignores, pods do not.
            pid = spawn(
                self._shim[0],
                [*self._shim, str(where), str(spec.attempt), "--", *spec.argv],
                stdin=gate_r,
                log=str(log),
                blocked=shim.FORWARDED,
                defaults=_POD_SIGNALS_DEFAULT,
            )
        except BaseException:
            os.close(gate_w)
            raise
        finally:
            os.close(gate_r)
        try:
            pidfd = os.pidfd_open(pid)
            stat = proc_stat(pid)  # our unreaped child: readable even if it died already
            assert stat is not None
            record = ProcRecord(pid, stat.start_ticks, spec.attempt)
            _write_record(os.path.join(where, PROC_FILE), json.dumps(record.to_json(spec.argv)) + "\n")
        except BaseException:
            os.close(gate_w)  # EOF at the gate: the shim starts nothing and exits
            os.waitpid(pid, 0)
            raise
        order = shim.encode_order(spec.env, spec.workdir)
        with contextlib.suppress(BrokenPipeError), open(gate_w, "wb") as gate:
            gate.write(order)  # a broken pipe means the shim died: the watcher reports its end
        return _Watch(key=spec.key, pid=pid, attempt=spec.attempt, pidfd=pidfd, pod_dir=where)

    def _add(self, watch: _Watch) -> None:
        """Watch `watch` from now on (the caller holds the lock)."""
        if self._closed.is_set():
            os.close(watch.pidfd)  # closed meanwhile: the pod runs on, for whoever adopts it
            return
        self._watches[watch.key] = watch
        self._wake()

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise RuntimeError("the executor is closed")

    # -- watching ----------------------------------------------------------------------------------

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # full (a wake-up is pending anyway) or closed
            os.write(self._wake_w, b".")

    def _watch_loop(self) -> None:
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        polled: dict[int, _Watch] = {}
        while True:
            with self._cond:
                if self._closed.is_set():
                    return
                for watch in self._watches.values():
                    if watch.pidfd not in polled:
                        polled[watch.pidfd] = watch
                        poller.register(watch.pidfd, select.POLLIN)
            for fd, _ in poller.poll():
                if fd == self._wake_r:
                    with contextlib.suppress(BlockingIOError):
                        while os.read(fd, 4096):
                            pass
                elif not self._closed.is_set():
                    poller.unregister(fd)
                    self._finish(polled.pop(fd))

    def _finish(self, watch: _Watch) -> None:
        """The shim of `watch` has exited: reap it, make sure its group is gone, hand out the end."""
        status = reap(watch.pid)
        outcome = Outcome.load(watch.pod_dir, watch.attempt)
        note = ""
        if outcome is not None:
            # The shim emptied its group before recording this (its invariant): nothing is left.
            code, when = outcome.exit_code, outcome.finished_at
        else:
            code, when = (137 if status is None else exit_code_of(status)), self._clock.now()
            note = "the shim ended without recording an exit code"
            # The shim was killed: what is left of its group holds the group's number, so it is ours.
            if not kill_group(watch.pid) or not kill_marked(watch.pod_dir):
                note += "; processes of the group survived SIGKILL"
        if watch.killed:
            note = f"killed: still running {watch.grace:g}s after SIGTERM"
        kind: EventKind = "stopped" if watch.stopping else "exited"
        event = ProcessEvent(watch.key, kind, code, watch.attempt, when, note)
        with self._cond:
            retire(watch.pod_dir)
            # Out of the table before report(): whoever hears of the end may run the pod again at once.
            del self._watches[watch.key]
            os.close(watch.pidfd)
            watch.done = True
            self._delivering += 1
            self._cond.notify_all()
        try:
            self._report(event)
        except Exception:
            _log.exception("report(%s) failed", event)
        finally:
            with self._cond:
                self._delivering -= 1
                self._cond.notify_all()

    def _escalate(self, watch: _Watch, grace: float) -> None:
        with self._cond:
            self._cond.wait_for(lambda: watch.done or self._closed.is_set(), timeout=grace)
            if watch.done or self._closed.is_set() or watch.grace < grace:
                return  # ended, let go of, or a shorter grace took over
            watch.killed = True
            # What left the group (setsid) first, while the shim still holds it below itself.
            kill_tree(watch.pid)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(watch.pid, signal.SIGKILL)  # the watch is live, so the group is still ours

    # -- adopting ----------------------------------------------------------------------------------

    def _adopt_one(self, key: str, where: Path, record: ProcRecord) -> ProcessEvent | None:
        pidfd = open_same(record.pid, record.start_ticks)
        if pidfd is not None and _at_gate(record.pid):
            # Its executor died after recording the attempt and before opening the gate: the shim reads
            # EOF, starts nothing and says so (`shim.UNSTARTED_FILE`). Wait for that, then see below.
            wait_exited([pidfd], 10.0)
        if _unstarted(where, record.attempt):
            # Nothing of the attempt ran: no end to hand out. proc.json goes (not to proc.done.json, which
            # would make `past` report it ended), and the owner starts the attempt, as if never recorded.
            if pidfd is not None:
                wait_exited([pidfd], 10.0)
                os.close(pidfd)
            reap(record.pid)
            os.unlink(where / PROC_FILE)
            return None
        outcome = Outcome.load(where, record.attempt)
        if pidfd is not None and outcome is None:
            with self._cond:
                self._add(_Watch(key=key, pid=record.pid, attempt=record.attempt, pidfd=pidfd, pod_dir=where))
            return ProcessEvent(key, "running", None, record.attempt, self._clock.now())
        if pidfd is not None:  # it has recorded its end and is on its way out: let it go
            wait_exited([pidfd], 10.0)
            os.close(pidfd)
        status = reap(record.pid)  # ours only if the previous executor lived in this process (tests)
        if outcome is not None:
            retire(where)
            return ProcessEvent(key, "exited", outcome.exit_code, record.attempt, outcome.finished_at)
        st = proc_stat(record.pid)
        if st is None or st.start_ticks == record.start_ticks:
            # The number is free or still the dead shim's, so any member left in the group is ours.
            # (Taken by another process, the number proves the old group empty.)
            kill_group(record.pid)
        kill_marked(where)
        retire(where)
        code = 137 if status is None else exit_code_of(status)
        note = "ended while nobody watched, without recording an exit code (its shim was killed)"
        return ProcessEvent(key, "exited", code, record.attempt, self._clock.now(), note)


def _at_gate(pid: int) -> bool:
    """Whether the shim `pid` has read no order yet: its stdin is still the gate, a pipe (after the gate,
    both shims put /dev/null there)."""
    try:
        return os.readlink(f"/proc/{pid}/fd/0").startswith("pipe:")
    except OSError:
        return False


def _unstarted(where: Path, attempt: int) -> bool:
    """Whether the shim of `attempt` found its gate closed with no order, and so started nothing."""
    try:
        return (where / shim.UNSTARTED_FILE).read_text().strip() == str(attempt)
    except (OSError, ValueError):
        return False


def _write_record(path: str, text: str) -> None:
    """Write proc.json in place, not through a temporary file renamed over it: one file fewer created per start
    (on ext4 without a journal, as on the benchmark machine, each new inode scans the recently deleted ones).

    Nobody reads it while it is written: its only reader is a later executor's adopt(), once this daemon is
    gone. A `kill -9` between the open and the write leaves it empty, which adopt() leaves alone, so the owner
    starts the pod again: what happens when the kill comes before the file exists (the shim, its gate closed
    with the daemon, has started nothing). A write that fails takes the file with it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        data = memoryview(text.encode())
        while data:  # a regular file takes it all at once, but for a short write on a full disk
            data = data[os.write(fd, data) :]
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    finally:
        os.close(fd)
