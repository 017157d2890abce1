"""The launcher's entry point, shared by `python -m caldera.launcher` and `caldera launch`.

`main(argv)` parses the settings (bad ones: one line, exit 2), connects to etcd lazily (the
agent retries while it is unreachable) and runs the agent's loop: act, then wait for the next
event or timer. Signals (SIGTERM, SIGINT, SIGHUP) become events: the agent stops its workers,
deletes its key and the process exits 128+signal.

Kept light on purpose (no numpy, torch, web framework): it starts in every elastic pod, and its
start-up time is part of the recovery time. The warm spares (`spares.py`) are started right after
the settings are parsed, before the rest of the launcher is even imported: in a pod that replaces
a dead one, their import of torch is what the whole job waits for.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

from caldera.launcher.settings import Settings, SettingsError, parse, usage_error
from caldera.launcher.spares import SparePool, spare_env
from caldera.launcher.zygote import STARTER_VAR

if TYPE_CHECKING:
    from caldera.launcher.agent import Agent
    from caldera.launcher.kv import KV

HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
CONNECT_TIMEOUT_S = 3.0
CLOSE_LIMIT = 20.0  # seconds a launcher that knows its exit code may take to close and end (`exit_within`)
STILL_CLOSING = "caldera launch: still closing"


def run(agent: Agent, on_stop: Callable[[int], None] | None = None, process_ends: bool = False) -> int:
    """Drive `agent` until this node is finished; its exit code (0, 1, or 128+signal). `on_stop(code)` is called
    once it is known, before the agent closes (`Agent.close(process_ends)`)."""
    from caldera.launcher.events import Signalled, next_events

    def on_signal(signum: int, frame: FrameType | None) -> None:
        agent.events.put(Signalled(signum))  # SimpleQueue.put is safe in a signal handler

    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, on_signal) for sig in HANDLED_SIGNALS}
    code: int | None = None
    try:
        while True:
            code = agent.step()
            if code is not None:
                return code
            for event in next_events(agent.events, agent.wake_in()):
                code = agent.handle(event)
                if code is not None:
                    return code
    finally:
        if on_stop is not None:
            on_stop(1 if code is None else code)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        agent.close(process_ends)


def exit_within(limit: float) -> Callable[[int], None]:
    """An `on_stop` for the launcher's process: once its exit code is known, the process ends within `limit`
    seconds, whatever might hang in closing the agent. A launcher of a finished job once logged `code=0 exit`
    and did not end (a fresh clone's make test, 7 Dec: the cause not found yet). Past the limit every thread's
    stack goes to stderr, the pod's log, with a line saying so, and the process exits with its code: the pod
    completes, and the next such hang says where it was.

    That timer is a Python thread: it cannot run while a thread is stuck in C code holding the interpreter's
    lock (the gRPC core's teardown in the etcd client's close is one such place). `faulthandler`'s own timer,
    a C thread, still can: 5 s later it writes the stacks and exits 1."""

    def on_stop(code: int) -> None:
        def fire() -> None:
            sys.stderr.write(f"{STILL_CLOSING} {limit:g}s after its exit (code {code}); the threads' stacks:\n")
            sys.stderr.flush()
            faulthandler.dump_traceback(all_threads=True)
            os._exit(code)

        timer = threading.Timer(limit, fire)
        timer.daemon = True
        timer.start()
        faulthandler.dump_traceback_later(limit + 5.0, exit=True)

    return on_stop


def end(code: int) -> NoReturn:
    """End the launcher's process with `code`, now: its workers and spares are stopped and its key is deleted
    (`Agent.close`). The interpreter's own shutdown has nothing left to do that matters, and it is where no
    watchdog sees a hang: the last garbage collection runs the etcd client's finalizers, which take gRPC's locks
    (one held by a daemon thread frozen for the shutdown deadlocks it), and gRPC tears its core down at exit."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def connector(settings: Settings) -> KV:
    from caldera.launcher.etcd import connect  # the etcd client (gRPC) loads only when used

    return connect(settings.server, CONNECT_TIMEOUT_S)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    try:
        settings = parse(sys.argv[1:] if argv is None else argv)
    except SettingsError as e:
        usage_error(str(e))
    # Spares forked by the node's zygote where a runtime runs one (the embedded cluster); elsewhere cold spares:
    # a launcher's own zygote once kept its launcher from exiting after `code=0 exit` (a fresh clone's make test,
    # tests/launcher/test_launch_etcd.py::test_scale_by_set_target_3_to_2_to_3), a cause not found yet.
    node_zygote = STARTER_VAR in os.environ
    spares = SparePool(settings.command, spare_env(os.environ), settings.preload, settings.nproc, zygote=node_zygote)
    spares.fill()  # first of all: they import for seconds while the launcher loads, connects and registers
    from caldera.launcher.agent import Agent
    from caldera.utils.clock import SystemClock

    agent = Agent(settings, lambda: connector(settings), SystemClock(), spares=spares)
    agent.log(
        "launcher started",
        np=f"{settings.lo}:{settings.hi}",
        nproc=settings.nproc,
        server=settings.server,
        ttl=settings.ttl,
    )
    try:
        code = run(agent, exit_within(CLOSE_LIMIT), process_ends=True)
    except Exception as e:  # a bug, not a user error: its workers are stopped (run's finally); one line
        if os.environ.get("CALDERA_DEBUG"):
            raise
        agent.log(f"internal error: {type(e).__name__}: {e} (set CALDERA_DEBUG=1 for the traceback)", code=1)
        code = 1
    end(code)
