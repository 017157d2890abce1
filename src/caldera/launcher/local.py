"""This node's part of each round: its worker group, and what became of it.

The agent decides when a round starts and stops; this keeps the facts about the local
processes across rounds: the group running now (at most one), the last round started here
(a round is never started twice), the last round whose workers failed here, the round whose
workers all exited 0, and a failure not yet reported to the store (`rounds/<n>/failed/<node>`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from caldera.launcher.envs import IncompleteRound, render
from caldera.launcher.eventlog import EventLog
from caldera.launcher.records import Ack, Round
from caldera.launcher.settings import Settings
from caldera.launcher.spares import SparePool, spare_env
from caldera.launcher.workers import WorkerExit, WorkerGroup
from caldera.utils.clock import Clock


class LocalWorkers:
    def __init__(
        self,
        settings: Settings,
        clock: Clock,
        log: EventLog,
        on_exit: Callable[[WorkerExit], None],
        base_env: Mapping[str, str],
        spares: SparePool | None = None,
    ) -> None:
        self.s = settings
        self.clock = clock
        self.log = log
        self._on_exit = on_exit
        self.base_env = dict(base_env)
        self.group: WorkerGroup | None = None
        self.started: int | None = None  # the last round this node started workers in
        self.failed: int | None = None  # the last round this node's workers failed in
        self.completed: int | None = None  # the round this node's workers all exited 0 in
        self.unreported: tuple[int, list[int]] | None = None  # (round, exit codes) to write as failed
        # Warm spares start importing now (or already did: `main`), while the rendezvous goes on (see spares.py).
        if spares is None:
            spares = SparePool(settings.command, spare_env(self.base_env), settings.preload, settings.nproc)
            spares.fill()
        self.spares = spares

    def running_in(self, n: int) -> bool:
        return self.group is not None and self.group.round == n and self.group.running()

    def start(self, current: Round, acks: Mapping[str, Ack], node_id: str) -> None:
        """Start this node's processes of `current` (every member acknowledged it)."""
        self.started = current.round
        try:
            envs = render(self.s.job_id, current, acks, node_id, self.s.max_restarts, self.base_env)
        except IncompleteRound as e:  # a peer's acknowledgement is unusable: fail the round, not the launcher
            self._failed_to_start(current.round, str(e))
            return
        master = acks[current.members[0]]
        group = WorkerGroup(self.s.command, envs, current.round, self._on_exit, self.base_env, self.spares)
        try:
            group.start()
        except OSError as e:
            self._failed_to_start(current.round, f"cannot start {self.s.command[0]!r}: {e}")
            return
        self.log(
            "start",
            round=current.round,
            world=envs[0]["WORLD_SIZE"],
            rank=envs[0]["GROUP_RANK"],
            master=f"{master.host}:{master.master_port}",
            pids=",".join(str(p) for p in group.pids),
        )
        self.group = group
        self.spares.refill()  # warm again for the next round, at idle priority behind this one

    def _failed_to_start(self, n: int, why: str) -> None:
        self.log(f"workers failed ({why})", round=n)
        self.failed = n
        self.unreported = (n, [127] * self.s.nproc)

    def stop(self, why: str) -> None:
        """Stop the running group, if any (SIGTERM, grace, SIGKILL; returns when they are gone)."""
        group, self.group = self.group, None
        if group is None:
            return
        if group.all_exited_0():
            # They ended on their own, all well, before their exits were handled (a lease lost while the
            # store was out of reach comes first): the round is done here. Dropped, it would run again.
            group.stop(0.0, self.clock)  # reap stray children of the workers
            self.log("workers succeeded", round=group.round)
            self.completed = group.round
            return
        if group.running():
            self.log(f"stopping workers ({why})", round=group.round)
        group.stop(self.s.grace, self.clock)

    def exited(self, event: WorkerExit) -> bool:
        """Take a worker's exit into account; True if this changed what the node must do."""
        group = self.group
        if group is None or event.round != group.round or event.pid not in group.pids:
            return False  # a worker of a group already stopped
        if event.code != 0:
            self.log(
                f"workers failed (local_rank={event.local_rank} pid={event.pid} code={event.code})", round=group.round
            )
            self.stop("a local worker failed")
            self.failed = group.round
            codes = group.codes()
            self.unreported = (group.round, [codes.get(i, 0) for i in range(self.s.nproc)])
            return True
        codes = group.codes()
        if len(codes) < self.s.nproc or any(c != 0 for c in codes.values()):
            return False
        self.log("workers succeeded", round=group.round)
        group.stop(0.0, self.clock)  # reap stray children of the workers
        self.group = None
        self.completed = group.round
        return True
