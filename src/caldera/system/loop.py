"""The control loop: one thread owns the control plane, and an answer leaves only once what it did is durable.

API calls (reads and writes) and process events are closures put on the inbox. A turn
takes what waits there (at most BATCH), runs each, settles the plane, commits what changed
to the store in one transaction, and only then lets the turn's held side effects happen
(pods' processes started or stopped, `HeldEffects`) and answers the callers. So:

- a request answered with success is in the store: a `kill -9` at any moment loses nothing
  that was answered (commit before reply);
- one commit serves every request of the turn (group commit): sixteen clients pay for one
  transaction, not sixteen;
- a pod's process starts only once the store says it runs, so a restarted daemon finds it
  again and never starts it twice.

When the store cannot be written (disk full, a read-only state directory) the turn's writers
get `Unavailable`, the store keeps its last state (the transaction is rolled back), held
effects wait, and later writes are refused at once until a commit succeeds again (one is
tried every turn, at least once a second). Reads and process events go on meanwhile.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

from caldera.system.api import Unavailable
from caldera.utils.clock import Clock

log = logging.getLogger("caldera.daemon")
T = TypeVar("T")
BATCH = 512  # tasks a turn takes at most: bounds the wait of the first caller of a busy turn
IDLE = 1.0  # seconds between turns when nothing happens (timed work and retries of a failed commit)


@dataclass(frozen=True, slots=True)
class Task:
    fn: Callable[[], Any]
    future: Future[Any] | None  # None: a process event, nobody waits
    writes: bool  # a read-only task is never refused and needs no commit of its own


@dataclass(frozen=True, slots=True)
class Turn:
    """What the loop does around the tasks; each runs on the loop's thread."""

    settle: Callable[[], None]  # timed work, then controller and scheduler until nothing moves
    commit: Callable[[], None]  # write what changed in one transaction; raises if it could not
    release: Callable[[], None]  # let the side effects the committed turn asked for happen
    next_wakeup: Callable[[], float | None]  # when timed work is next due (clock time)


class ControlLoop:
    def __init__(self, turn: Turn, clock: Clock) -> None:
        self._turn = turn
        self._clock = clock
        self._inbox: queue.SimpleQueue[Task] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.store_error = ""  # why the last commit failed ("" once one succeeded)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="caldera-control", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._inbox.put(Task(lambda: None, None, False))  # wake it
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)

    def call(self, fn: Callable[[], T], timeout: float = 60.0, *, writes: bool = True) -> T:
        """`fn`'s result once the turn that ran it is committed (on the loop at once if not started)."""
        return self.later(fn, writes=writes).result(timeout=timeout)

    def later(self, fn: Callable[[], T], *, writes: bool = True) -> Future[T]:
        """`call` without waiting: a future that gets `fn`'s result (or exception) once the turn that ran it
        is committed. For a caller that must not block, as the HTTP server's event loop (`asyncio.wrap_future`)."""
        fut: Future[T] = Future()
        if self._thread is None or threading.current_thread() is self._thread:
            try:
                fut.set_result(fn())
            except Exception as e:
                fut.set_exception(e)
            return fut
        self._inbox.put(Task(fn, fut, writes))
        return fut

    def post(self, fn: Callable[[], None]) -> None:
        """Run `fn` on the loop; nobody waits for it (a process event)."""
        self._inbox.put(Task(fn, None, True))

    # ------------------------------------------------------------ a turn

    def _run(self) -> None:
        while not self._stop.is_set():
            batch = self._take()
            if self._stop.is_set():
                break
            answers = [self._do(task) for task in batch]
            try:
                self._turn.settle()
            except Exception:
                log.exception("control loop failed to settle")
            committed = self._commit()
            if committed:  # before the answers: a pod shown Running has its start queued (done in order, `effects.py`)
                try:
                    self._turn.release()
                except Exception:
                    log.exception("control loop failed to start or stop processes")
            for task, (ok, value) in zip(batch, answers, strict=True):
                if task.future is None:
                    continue
                if ok and task.writes and not committed:
                    task.future.set_exception(Unavailable(self._unsaved(done=True)))
                elif ok:
                    task.future.set_result(value)
                else:
                    task.future.set_exception(value)

    def _take(self) -> list[Task]:
        wake = self._turn.next_wakeup()
        timeout = IDLE if wake is None else min(IDLE, max(0.0, wake - self._clock.now()))
        batch: list[Task] = []
        try:
            batch.append(self._inbox.get(timeout=timeout))
            while len(batch) < BATCH:
                batch.append(self._inbox.get_nowait())
        except queue.Empty:
            pass
        return batch

    def _do(self, task: Task) -> tuple[bool, Any]:
        if task.writes and task.future is not None and self.store_error:
            return False, Unavailable(self._unsaved(done=False))  # refused before it changes anything
        try:
            return True, task.fn()
        except Exception as e:  # the caller gets it; the loop goes on
            if task.future is None:
                log.exception("control loop task failed")
            return False, e

    def _commit(self) -> bool:
        try:
            self._turn.commit()
        except Exception as e:
            if not self.store_error:
                log.error("cannot save the state: %s (changes are kept in memory and saved once it works)", e)
            self.store_error = str(e) or type(e).__name__
            return False
        if self.store_error:
            log.info("the state is saved again")
        self.store_error = ""
        return True

    def _unsaved(self, done: bool) -> str:
        what = (
            "this change is not saved yet (it is kept in memory and saved once the daemon can, lost if it stops before)"
            if done
            else "no change is accepted until it can"
        )
        return (
            f"the daemon cannot save its state ({self.store_error}): {what}; "
            "free space or make the state directory writable (it retries every second)"
        )
