"""The launcher's control loop: one thread that owns every decision and every worker.

Everything else only reports, through one queue: the watch on the job's prefix ("something
changed"), the keep-alive (lease expired / stale / restored), the worker reapers (exit
codes) and signal handlers. The loop then re-reads the job's keys (one range read; the watch
is only a trigger, so a missed or coalesced event costs nothing) and acts, level-triggered:

1. not yet prepared: if a finished run of this job id is there, wait (bounded) for its
   launchers to leave, then clear it (`rendezvous.clear_finished`);
2. not registered (start, lease expired, key removed by `remove_pod`): revoke the old lease,
   grant a new one, register under a fresh node id — a newcomer;
3. `done`: members whose workers still run in the finished round wait for them; everyone
   else stops its workers, leaves (the last one deletes the prefix) and exits 0 (succeeded)
   or 1 (failed);
4. `rounds.judge` on the alive nodes: a broken round (member gone, workers failed) stops the
   local workers at once; a due proposal is written by compare-and-swap (losers re-read and
   adopt the winner's);
5. member of the current round: stop older workers, pick fresh ports, acknowledge; once all
   members acknowledged, start the workers (`local.LocalWorkers`, with `envs.render`). Not a
   member: a spare, no workers.

Worker exit codes: all 0 → write `done` (if absent), leave, exit 0; any non-zero → stop the
others and write `rounds/<n>/failed/<node>`, then wait for the next round. A lease presumed
lost stops the workers before anything else (never train on in a stale group).
Store unreachable: retried with backoff (0.1 s → 2 s), the workers keep running until the
keep-alive says the lease is stale. A safety re-read runs every few seconds anyway.
"""

from __future__ import annotations

import os
import queue
import signal
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace

from caldera.launcher import rendezvous as rdzv
from caldera.launcher.eventlog import EventLog
from caldera.launcher.events import Changed, Event, Lease, WatchBroken
from caldera.launcher.keepalive import KeepAlive, LeaseState
from caldera.launcher.kv import KV, Cancel, KVError, LeaseNotFound, Unavailable
from caldera.launcher.local import LocalWorkers
from caldera.launcher.ports import free_ports
from caldera.launcher.records import FAILED, SUCCEEDED, Ack, Done, NodeRecord
from caldera.launcher.rounds import DEFAULT_ELASTIC_TIMEOUT, Limits, exhausted, judge
from caldera.launcher.settings import Settings
from caldera.launcher.spares import SparePool
from caldera.launcher.workers import WorkerExit
from caldera.utils.clock import Clock

SAFETY_POLL_S = 5.0
BACKOFF_MIN_S, BACKOFF_MAX_S = 0.1, 2.0


class Agent:
    def __init__(
        self,
        settings: Settings,
        connect: Callable[[], KV],
        clock: Clock,
        log: EventLog | None = None,
        base_env: Mapping[str, str] | None = None,
        spares: SparePool | None = None,
    ) -> None:
        self.s = settings
        self._connect = connect
        self.clock = clock
        self.log = log if log is not None else EventLog(settings.job_id, clock)
        self.base_env = dict(os.environ if base_env is None else base_env)
        self.limits = Limits(settings.lo, settings.hi, settings.max_restarts, settings.elastic_timeout)
        self.events: queue.SimpleQueue[Event] = queue.SimpleQueue()
        self.kv: KV | None = None
        self.keepalive: KeepAlive | None = None
        self._cancel_watch: Cancel | None = None
        now = clock.now()
        # what the loop knows
        self.node_id = ""
        self.lease = 0
        self.registered = False
        self.prepared = False
        timeout = settings.elastic_timeout if settings.elastic_timeout is not None else DEFAULT_ELASTIC_TIMEOUT
        self._prepare_deadline = now + max(timeout, 3.0 * settings.ttl)
        self.done: Done | None = None
        self.acked: int | None = None  # the round this registration acknowledged
        self.workers = LocalWorkers(settings, clock, self.log, self.events.put, self.base_env, spares)
        self._highest_round = -1  # the highest round number seen
        # timers
        self.dirty = True
        self._poll_at = now + SAFETY_POLL_S
        self._settle_at: float | None = None
        self._retry_at: float | None = None
        self._backoff = 0.0
        self._alive: tuple[str, ...] | None = None
        self._alive_since = now
        self._said: dict[str, str] = {}  # the last line of each kind of repeated log, to say it once

    # ------------------------------------------------------------ the loop (`caldera.launcher.main.run` drives it)

    def wake_in(self) -> float:
        """Seconds until the loop has something to do unless an event comes first."""
        now = self.clock.now()
        if self._retry_at is not None:
            return max(0.0, self._retry_at - now)
        if self.dirty:
            return 0.0
        due = min(t for t in (self._poll_at, self._settle_at) if t is not None)
        return max(0.0, due - now)

    def close(self, process_ends: bool = False) -> None:
        """Stop the workers and spares; then the keep-alive, the watch and the connection, unless `process_ends`:
        the launcher's process is about to end, which drops them, and gRPC's teardown of a channel is where a
        closing client can hang holding the interpreter's lock (grpc/grpc#17001, #20026). Its keys are gone by
        then (`_leave`), or expire with its lease."""
        self.workers.stop("the launcher is closing")
        self.workers.spares.close()
        if process_ends:
            return
        if self.keepalive is not None:
            self.keepalive.stop()
        if self._cancel_watch is not None:
            self._cancel_watch()
            self._cancel_watch = None
        if self.kv is not None:
            self.kv.close()

    # ------------------------------------------------------------ events

    def handle(self, event: Event) -> int | None:
        if isinstance(event, Changed):
            self.dirty = True
        elif isinstance(event, WatchBroken):
            self._watch_lost(event.error)
        elif isinstance(event, Lease):
            if event.lease == self.lease and self.registered:
                self._lease_event(event)
        elif isinstance(event, WorkerExit):
            if self.workers.exited(event):
                self.dirty = True
        else:
            return self._stop_by_signal(event.signum)
        return None

    def _watch_lost(self, error: str) -> None:
        self.log(f"watch lost: {error}")
        self._cancel_watch = None
        self.dirty = True

    def _lease_event(self, event: Lease) -> None:
        if event.state is LeaseState.RESTORED:
            self.log(f"etcd reachable again: {event.message}")
            return
        self.log("lease expired" if event.state is LeaseState.EXPIRED else f"etcd unavailable: {event.message}")
        self._lose_registration("lease lost", expired=event.state is LeaseState.EXPIRED)

    def _lose_registration(self, why: str, expired: bool) -> None:
        self.workers.stop(why)
        if self.keepalive is not None:
            self.keepalive.use(0)
        if expired:
            self.lease = 0
        self.registered = False
        self.dirty = True

    def _stop_by_signal(self, signum: int) -> int:
        name = signal.Signals(signum).name
        self.workers.stop(f"{name} received")
        if self.kv is not None and self.registered:
            try:
                rdzv.leave(self.kv, self.s.job_id, self.lease, last_deletes_job=False)
            except KVError as e:
                self.log(f"could not delete this node's keys ({e}); they expire with the lease")
        self.registered = False
        code = 128 + signum
        self.log(f"stopped by {name}", code=code)
        return code

    # ------------------------------------------------------------ acting on the store

    def step(self) -> int | None:
        """Act on the store if anything is due; an exit code once this node is finished."""
        if not self._due(self.clock.now()):
            return None
        self.dirty = False
        try:
            code = self._reconcile()
        except LeaseNotFound as e:  # a write on our lease: it expired before the keep-alive noticed
            self.log(f"lease expired ({e})")
            self._lose_registration("lease lost", expired=True)
            return None
        except KVError as e:
            self._backoff = min(BACKOFF_MAX_S, max(BACKOFF_MIN_S, self._backoff * 2))
            self._retry_at = self.clock.now() + self._backoff
            self.dirty = True
            what = "etcd unavailable" if isinstance(e, Unavailable) else "etcd error"
            self._say("etcd", f"{what}: {e}")
            return None
        if self._retry_at is not None:
            self._retry_at = None
            self._backoff = 0.0
            if self._said.pop("etcd", None):
                self.log("etcd reachable again")
        return code

    def _due(self, now: float) -> bool:
        if self._retry_at is not None:
            return now >= self._retry_at
        return self.dirty or now >= self._poll_at or (self._settle_at is not None and now >= self._settle_at)

    def _say(self, kind: str, line: str, **fields: object) -> None:
        """Log `line` unless it is what was last said about `kind` (waiting, spare, ...)."""
        text = " ".join([*(f"{k}={v}" for k, v in fields.items()), line])
        if self._said.get(kind) != text:
            self._said[kind] = text
            self.log(line, **fields)

    def _ensure_connected(self) -> KV:
        if self.kv is None:
            self.kv = self._connect()
            self.keepalive = KeepAlive(self.kv, self.s.ttl, self.clock, self._on_lease)
            self.keepalive.start()
        if self._cancel_watch is None:
            revision = self.kv.revision()  # the read that follows covers everything up to here
            self._cancel_watch = self.kv.watch_prefix(
                rdzv.job_prefix(self.s.job_id),
                lambda e: self.events.put(Changed(e.revision)),
                start_revision=revision + 1,
                on_error=lambda e: self.events.put(WatchBroken(str(e))),
            )
        return self.kv

    def _on_lease(self, state: LeaseState, lease: int, message: str) -> None:
        self.events.put(Lease(state, lease, message))

    def _reconcile(self) -> int | None:
        kv = self._ensure_connected()
        now = self.clock.now()
        self._poll_at = now + SAFETY_POLL_S
        if self.workers.unreported is not None and self.registered:
            n, codes = self.workers.unreported
            rdzv.report_failure(kv, self.s.job_id, n, self.node_id, codes, self.lease)
        self.workers.unreported = None
        view = rdzv.read(kv, self.s.job_id)
        if not self.prepared:
            return self._prepare(kv, view)
        if self.workers.completed is not None:
            return self._complete(kv, view, self.workers.completed)
        if view.done is not None:
            self.done = view.done
        if self.done is not None:
            return self._finish(kv, self.done)
        if not self.registered:
            self._register(kv)
            return None
        if view.node(self.node_id) is None:
            self.log("node key deleted: registering again")
            self._lose_registration("node key deleted", expired=False)
            return None
        return self._follow(kv, view)

    def _prepare(self, kv: KV, view: rdzv.JobView) -> int | None:
        if rdzv.finished_run(view):
            if view.nodes:
                if self.clock.now() < self._prepare_deadline:
                    self._say(
                        "prepare",
                        f"job id reused: waiting for {len(view.nodes)} launchers of the finished run to leave",
                    )
                    self._settle_at = self._prepare_deadline
                    return None
                self.log(
                    f"job id {self.s.job_id!r} finished but {len(view.nodes)} of its launchers are still registered; "
                    "wait for them to exit or use another job id"
                )
                return 1
            rdzv.clear_finished(kv, self.s.job_id, view)
            self.log("cleared the keys of a finished run of this job id")
        self.prepared = True
        self._settle_at = None
        self.dirty = True
        return None

    def _register(self, kv: KV) -> None:
        if self.lease:
            kv.revoke(self.lease)  # a lease presumed stale may still hold our old key: drop it now
            self.lease = 0
        lease = kv.grant(self.s.ttl)
        node_id = uuid.uuid4().hex
        record = NodeRecord(self.s.host, self.s.nproc, self.s.pod, os.getpid())
        rdzv.register(kv, self.s.job_id, node_id, record, lease)
        self.node_id, self.lease, self.registered, self.acked = node_id, lease, True, None
        self.log.node = node_id
        assert self.keepalive is not None
        self.keepalive.use(lease)
        self.log("registered", host=self.s.host, pod=self.s.pod or "-", lease=f"{lease:x}")
        self.dirty = True

    def _follow(self, kv: KV, view: rdzv.JobView) -> int | None:
        now = self.clock.now()
        alive = tuple(sorted(view.alive()))
        if alive != self._alive:
            self._alive, self._alive_since = alive, now
        current = view.round
        if current is not None and exhausted(current, self.limits):
            rdzv.finish(kv, self.s.job_id, Done(current.round, FAILED))
            self.dirty = True
            return None
        verdict = judge(current, view.alive(), view.failed, view.np, self.limits, now - self._alive_since)
        if verdict.broken is not None and current is not None and self.node_id in current.members:
            gone = [m[:8] for m in current.members if view.node(m) is None]
            self._say("broken", verdict.broken + (f" ({', '.join(gone)})" if gone else ""), round=current.round)
            self.workers.stop(verdict.broken)
        if current is not None:
            self._highest_round = max(self._highest_round, current.round)
        if verdict.proposal is not None:
            p = verdict.proposal
            if current is None and self._highest_round >= 0:  # the round key was deleted under us (`clean`)
                p = replace(p, round=self._highest_round + 1)  # round numbers are never reused
            if rdzv.propose(kv, self.s.job_id, view, p):
                self.log("proposed", round=p.round, members=len(p.members), failures=p.failures)
                if exhausted(p, self.limits):
                    self.log(f"restart budget used up ({p.failures - 1} restarts after failures)", round=p.round)
                    rdzv.finish(kv, self.s.job_id, Done(p.round, FAILED))
            self.dirty = True
            return None
        self._settle_at = now + verdict.wait_s if verdict.wait_s is not None else None
        if verdict.wanted is not None:
            self._say("wait", f"waiting for {verdict.wanted} nodes (have {verdict.have})")
        if current is None or verdict.broken is not None:
            return None
        if self.node_id not in current.members:
            self.workers.stop(f"not a member of round {current.round}")
            self._say("wait", f"spare in round {current.round}")
            return None
        if self.acked != current.round:
            self.workers.stop(f"round {current.round}")
            rank = current.members.index(self.node_id)
            ports = free_ports(self.s.host, self.s.nproc + (1 if rank == 0 else 0))
            ack = Ack(self.s.host, tuple(ports[: self.s.nproc]), ports[-1] if rank == 0 else None)
            rdzv.acknowledge(kv, self.s.job_id, current.round, self.node_id, ack, self.lease)
            self.acked = current.round
            return None
        if self.workers.started != current.round and all(m in view.acks for m in current.members):
            self._said.pop("wait", None)
            self.workers.start(current, view.acks, self.node_id)
            self.dirty = self.workers.unreported is not None
        elif self.workers.started != current.round:
            self._say("wait", f"waiting for acknowledgements ({len(view.acks)}/{len(current.members)})")
        return None

    def _complete(self, kv: KV, view: rdzv.JobView, n: int) -> int:
        if view.done is None:
            rdzv.finish(kv, self.s.job_id, Done(n, SUCCEEDED))
        return self._leave(kv, 0, f"job succeeded in round {n}")

    def _finish(self, kv: KV, done: Done) -> int | None:
        if done.status == SUCCEEDED and self.workers.running_in(done.round):
            self._say("done", f"job completed by a peer in round {done.round}: waiting for local workers")
            return None
        self.workers.stop(f"job {done.status}")
        failed_here = done.status == SUCCEEDED and self.workers.failed == done.round
        code = 0 if done.status == SUCCEEDED and not failed_here else 1
        why = f"job {done.status} in round {done.round}" + (" (this node's workers failed)" if failed_here else "")
        return self._leave(kv, code, why)

    def _leave(self, kv: KV, code: int, why: str) -> int:
        self.log(why)
        if self.keepalive is not None:
            self.keepalive.use(0)
        try:
            if rdzv.leave(kv, self.s.job_id, self.lease if self.registered else 0, last_deletes_job=True):
                self.log("last node: deleted the job's keys")
        except KVError as e:
            self.log(f"could not delete this node's keys ({e}); they expire with the lease")
        self.registered = False
        self.log("exit", code=code)
        return code
