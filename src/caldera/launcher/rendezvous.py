"""The rendezvous protocol's keys and the operations on them (over `kv.KV`; no threads, no processes).

Keys under `/caldera/elastic/<job_id>/` (every per-node key is on that node's lease, so a dead
launcher's keys vanish with its lease and nothing per node outlives it):

  nodes/<node_id>            {"host", "nproc", "pod", "pid"}   lease. One per registration of a
                             launcher (a fresh uuid hex each time, so two launchers on one IP never
                             collide and a re-registered node is a newcomer). Join order =
                             create revision.
  np                         JSON int: the wanted node count (`set_target`, from `caldera scale`).
  round                      {"round", "members", "failures"}: written only by compare-and-swap on
                             the mod revision read (`propose`); the first proposer wins, the others
                             adopt its round. Numbers start at 0 and only grow while the key
                             lives; TORCHELASTIC_RESTART_COUNT is the round number.
  rounds/<n>/ready/<node_id> {"host", "ports", "master_port"}  lease. A member's acknowledgement of
                             round n with the ports it picked for it (bound to port 0 on its host,
                             closed, published: fresh every round, never cached). Workers start once
                             every member acknowledged (a barrier), so every process of the world
                             is started from the same round, ports and master.
  rounds/<n>/failed/<node_id> {"codes": [...]}  lease. A member's workers failed in round n.
  done                       {"round", "status"}: the job ended. Created once (put if absent).

Who deletes what: a leaving launcher revokes its lease (its node key and acknowledgements go);
the last one to leave after `done` deletes the whole prefix; the winner of round n deletes the
keys of rounds before n. `remove_pod` lets the daemon drop a dead pod's node at once instead of
after its TTL; `clean` deletes a job's keys.

A reused job id (at a launcher's start, before it registers): if `done` is there, the previous
run's launchers get a bounded time (max(elastic timeout, 3 TTL)) to leave; a crashed one's key
goes when its lease ends. Then `clear_finished` deletes `round`, `rounds/` and `done`, and round
numbers restart at 0. `np` is kept only if it was written after `done` (a `caldera scale` meant
for the new run), else deleted: the new run starts from its own --np. If launchers of the
finished run are still registered when the time is up, the launcher exits 1 with a message
rather than mixing two runs under one prefix (a pod restarted by its controller tries again).

Holes of the outlined design, closed here:
- A launcher that lost its lease re-registers under a NEW node id. With its old id, a peer whose
  watch coalesced the delete and the put would still see the old round as whole while this
  node's workers are stopped (they were, as the lease was lost): a stale group, hung. A new id
  makes the old round visibly broken.
- A node whose key vanished while its lease lives (`remove_pod` raced a refresh) treats it as a
  lost lease: stop, revoke, register anew.
- An exhausted round (failures > max_restarts) is itself written by compare-and-swap before
  `done` (failed), so exactly one verdict wins even when proposers disagree on membership, and a
  proposer that dies in between leaves a state every other launcher completes.
- The first node to finish revokes its lease, and with it its acknowledgement: a member that
  had not yet started its workers when `done` (succeeded) appears has nothing left to train and
  exits 0, instead of waiting on a barrier that can no longer complete.
- If the `round` key is deleted under running launchers (`clean`), they number the next round
  after the highest they saw, so a round number is never reused within one run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from caldera.launcher.kv import KV, KeyValue
from caldera.launcher.records import (
    Ack,
    Done,
    NodeRecord,
    Round,
    parse_ack,
    parse_done,
    parse_node,
    parse_np,
    parse_round,
)

ROOT = "/caldera/elastic/"


def job_prefix(job_id: str) -> str:
    if not job_id or "/" in job_id:
        raise ValueError(f"job id {job_id!r}: must be non-empty and contain no '/'")
    return f"{ROOT}{job_id}/"


@dataclass(frozen=True, slots=True)
class Keys:
    """The key layout of one job."""

    job_id: str

    @property
    def prefix(self) -> str:
        return job_prefix(self.job_id)

    @property
    def nodes(self) -> str:
        return self.prefix + "nodes/"

    def node(self, node_id: str) -> str:
        return self.nodes + node_id

    @property
    def np(self) -> str:
        return self.prefix + "np"

    @property
    def round(self) -> str:
        return self.prefix + "round"

    @property
    def rounds(self) -> str:
        return self.prefix + "rounds/"

    def ready(self, n: int, node_id: str = "") -> str:
        return f"{self.rounds}{n}/ready/{node_id}"

    def failed(self, n: int, node_id: str = "") -> str:
        return f"{self.rounds}{n}/failed/{node_id}"

    @property
    def done(self) -> str:
        return self.prefix + "done"


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    record: NodeRecord
    create_revision: int
    lease: int


@dataclass(slots=True)
class JobView:
    """One consistent read of a job's keys."""

    revision: int = 0  # the store's revision just before the read: watch from revision + 1
    nodes: list[Node] = field(default_factory=list)  # join order
    np: int | None = None
    np_revision: int = 0
    round: Round | None = None
    round_revision: int = 0  # the mod revision to compare-and-swap against (0: no round key)
    acks: dict[str, Ack] = field(default_factory=dict)  # for `round`
    failed: set[str] = field(default_factory=set)  # for `round`
    done: Done | None = None
    done_revision: int = 0
    old_rounds: set[int] = field(default_factory=set)  # round numbers below `round` with keys left

    def alive(self) -> list[str]:
        return [n.id for n in self.nodes]

    def node(self, node_id: str) -> Node | None:
        return next((n for n in self.nodes if n.id == node_id), None)


def read(kv: KV, job_id: str) -> JobView:
    """Read every key of the job at once and parse it (malformed values read as absent)."""
    keys = Keys(job_id)
    revision = kv.revision()
    return parse_view(keys, kv.get_prefix(keys.prefix), revision)


def parse_view(keys: Keys, items: Iterable[KeyValue], revision: int = 0) -> JobView:
    view = JobView(revision=revision)
    by_round: dict[int, list[tuple[str, str, KeyValue]]] = {}
    for kv in items:
        rest = kv.key.removeprefix(keys.prefix)
        if rest.startswith("nodes/"):
            record = parse_node(kv.value)
            if record is not None:
                view.nodes.append(Node(rest.removeprefix("nodes/"), record, kv.create_revision, kv.lease))
        elif rest == "np":
            view.np, view.np_revision = parse_np(kv.value), kv.mod_revision
        elif rest == "round":
            view.round, view.round_revision = parse_round(kv.value), kv.mod_revision
        elif rest == "done":
            view.done, view.done_revision = parse_done(kv.value), kv.mod_revision
        elif rest.startswith("rounds/"):
            digits, _, tail = rest.removeprefix("rounds/").partition("/")
            kind, _, node_id = tail.partition("/")
            if digits.isdigit() and node_id:
                by_round.setdefault(int(digits), []).append((kind, node_id, kv))
    view.nodes.sort(key=lambda n: n.create_revision)
    current = view.round.round if view.round is not None else None
    for number, entries in by_round.items():
        if number != current:
            if current is None or number < current:
                view.old_rounds.add(number)
            continue
        for kind, node_id, kv in entries:
            if kind == "ready":
                ack = parse_ack(kv.value)
                if ack is not None:
                    view.acks[node_id] = ack
            elif kind == "failed":
                view.failed.add(node_id)
    return view


# ---------------------------------------------------------------- what the daemon calls


def set_target(kv: KV, job_id: str, n: int) -> None:
    """Ask the job's launchers for `n` nodes (clamped by each to its MIN:MAX): `caldera scale`."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"the wanted node count must be a whole number >= 1, not {n!r}")
    kv.put(Keys(job_id).np, json.dumps(n))


def remove_pod(kv: KV, job_id: str, pod_name: str) -> int:
    """Drop the node keys of the launchers running in `pod_name` (the daemon saw the pod die), so
    the other launchers re-form at once rather than when the lease runs out; how many were dropped."""
    if not pod_name:
        return 0
    dropped = 0
    for item in kv.get_prefix(Keys(job_id).nodes):
        record = parse_node(item.value)
        if record is None or record.pod != pod_name:
            continue
        if item.lease:
            kv.revoke(item.lease)  # its acknowledgements go with it
        else:
            kv.delete(item.key)
        dropped += 1
    return dropped


def clean(kv: KV, job_id: str) -> int:
    """Delete every key of the job; how many were deleted."""
    return kv.delete_prefix(job_prefix(job_id))


# ---------------------------------------------------------------- what a launcher writes


def register(kv: KV, job_id: str, node_id: str, record: NodeRecord, lease: int) -> None:
    if not kv.create(Keys(job_id).node(node_id), record.to_json(), lease):
        raise RuntimeError(f"node id {node_id} is already registered")  # a uuid4 collision: a bug


def propose(kv: KV, job_id: str, view: JobView, proposal: Round) -> bool:
    """Write `proposal` if the round key is still the one `view` read; True if it won. The winner
    deletes the keys of the rounds before its own."""
    keys = Keys(job_id)
    if not kv.replace(keys.round, view.round_revision, proposal.to_json()):
        return False
    stale = set(view.old_rounds)
    if view.round is not None:
        stale.add(view.round.round)
    for number in sorted(n for n in stale if n < proposal.round):
        kv.delete_prefix(f"{keys.rounds}{number}/")
    return True


def acknowledge(kv: KV, job_id: str, n: int, node_id: str, ack: Ack, lease: int) -> None:
    kv.put(Keys(job_id).ready(n, node_id), ack.to_json(), lease)


def report_failure(kv: KV, job_id: str, n: int, node_id: str, codes: list[int], lease: int) -> None:
    kv.put(Keys(job_id).failed(n, node_id), json.dumps({"codes": codes}), lease)


def finish(kv: KV, job_id: str, done: Done) -> bool:
    """Record that the job ended (only the first record counts); True if this one was written."""
    return kv.create(Keys(job_id).done, done.to_json())


def leave(kv: KV, job_id: str, lease: int, last_deletes_job: bool) -> bool:
    """Drop this launcher's keys (its lease); with `last_deletes_job` (the job is done) and no node
    left, delete the job's prefix too. True if the prefix was deleted."""
    keys = Keys(job_id)
    if lease:
        kv.revoke(lease)
    if not last_deletes_job or kv.get_prefix(keys.nodes):
        return False
    kv.delete_prefix(keys.prefix)
    return True


def finished_run(view: JobView) -> bool:
    """A `done` key is there (parsable or not): the last run of this job id ended."""
    return view.done is not None or view.done_revision != 0


def clear_finished(kv: KV, job_id: str, view: JobView) -> None:
    """Delete a finished run's job-level keys, before a new run of the same job id registers (see the
    module docstring; the caller has waited for the finished run's nodes to leave)."""
    keys = Keys(job_id)
    kv.delete(keys.round)
    kv.delete_prefix(keys.rounds)
    if view.np_revision and view.np_revision < view.done_revision:
        kv.delete(keys.np)
    kv.delete(keys.done)  # last: a launcher stopped half-way leaves `done`, and the next one redoes this
