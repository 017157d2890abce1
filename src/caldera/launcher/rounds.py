"""When a new rendezvous round is due and who is in it: pure functions, no I/O, no clock.

Every launcher evaluates `judge` on the same state it reads from the store, so they agree on
the next round; the store's compare-and-swap on the `round` key picks one proposal when two
are made at once. The rules (reference/elastic-etcd.md, pitfalls 9 and 10):

- The wanted size is `np` (announced by the daemon or `caldera scale`) clamped to [MIN, MAX],
  or MAX without it.
- A round of the wanted size forms as soon as that many nodes are alive; with MIN ≤ alive <
  wanted, one of all alive nodes forms once the alive set has been stable for the elastic
  timeout; below MIN nothing forms (fault tolerance: survivors wait for a replacement).
- Waiting is only for a size someone asked for: an announced `np`, or MAX when the elastic
  timeout was configured (`--elastic-timeout`). Without either, nobody said more nodes are
  coming, so a round of every alive node (MIN..MAX) forms at once, and a newcomer makes the
  next one at once (the group grows again when a node joins).
- Ranks are sticky: a survivor keeps its rank if it is below the new size; holes are filled
  first by survivors whose old rank is too high (scale-in), then by newcomers in join order;
  anyone left over is a spare. One exception: rank 0 is never a newcomer while a survivor is
  in the round (the lowest-ranked survivor takes it, the newcomer that survivor's rank). Rank
  0's worker hosts the round's store (`MASTER_PORT`), which every other worker connects to
  with torch's backoff, and a newcomer's workers start cold (a new pod imports torch) while
  the survivors' start warm: the others would retry against a store that is not up yet, and
  connect up to ~2.7 s after it is (measured, torch 2.13), instead of finding it up.
- The current round is broken when one of its members is gone or its workers failed; a new
  round is proposed once a round can form whose members differ from the current ones (or
  that replaces a broken one). `failures` counts consecutive failed rounds with unchanged
  members and resets when they change; a round with more failures than `max_restarts`
  ends the job as failed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from caldera.launcher.records import Round

DEFAULT_ELASTIC_TIMEOUT = 30.0  # seconds to wait for an announced size when no timeout was configured


@dataclass(frozen=True, slots=True)
class Limits:
    lo: int  # MIN nodes
    hi: int  # MAX nodes
    max_restarts: int
    # Seconds the alive set must be stable to form a round below the wanted size; None (not
    # configured): DEFAULT_ELASTIC_TIMEOUT when a size was announced, else no wait at all.
    elastic_timeout: float | None

    def timeout(self, np: int | None) -> float:
        """How long to wait for the wanted size, given the announced size `np` (None: none)."""
        if self.elastic_timeout is not None:
            return self.elastic_timeout
        return DEFAULT_ELASTIC_TIMEOUT if np is not None else 0.0


def desired_size(np: int | None, lo: int, hi: int) -> int:
    """The node count wanted: the `np` key clamped to [lo, hi], or hi when there is none."""
    return max(lo, min(hi, np if np is not None else hi))


@dataclass(frozen=True, slots=True)
class Readiness:
    size: int | None  # form a round of this many nodes now; None: not yet
    wait_s: float | None = None  # not yet, but a round of all alive nodes can form after this many seconds


def readiness(alive: int, desired: int, lo: int, stable_for: float, timeout: float) -> Readiness:
    """The ready rule: `desired` at once, MIN..desired after `timeout` of stability, never below MIN."""
    if alive >= desired:
        return Readiness(desired)
    if alive >= lo:
        if stable_for >= timeout:
            return Readiness(alive)
        return Readiness(None, timeout - stable_for)
    return Readiness(None)


def assign_ranks(previous: Sequence[str], alive: Sequence[str], size: int) -> tuple[str, ...]:
    """The members of a round of `size` in rank order.

    `previous` are the last round's members in rank order, `alive` every live node in join
    order. Survivors keep a rank below `size`; the holes go to survivors ranked too high (in
    their old order), then to newcomers (in join order); but a newcomer that would get rank 0
    swaps with the lowest-ranked survivor, if any. Needs `size <= len(alive)`.
    """
    if size > len(alive):
        raise ValueError(f"cannot form a round of {size} from {len(alive)} alive nodes")
    live = set(alive)
    slots: list[str | None] = [None] * size
    movers: list[str] = []
    for old_rank, node in enumerate(previous):
        if node not in live:
            continue
        if old_rank < size:
            slots[old_rank] = node
        else:
            movers.append(node)
    known = set(previous)
    fill = iter([*movers, *(node for node in alive if node not in known)])
    members = [node if node is not None else next(fill) for node in slots]
    if members[0] not in known:  # rank 0 hosts the store: a survivor's (warm) workers, not a newcomer's (cold)
        survivor = next((i for i, node in enumerate(members) if node in known), None)
        if survivor is not None:
            members[0], members[survivor] = members[survivor], members[0]
    return tuple(members)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the job needs now, the same for every launcher that reads the same state."""

    broken: str | None = None  # why the current round can no longer train; None if it can (or there is none)
    proposal: Round | None = None  # the round to propose now; None: keep the current one, or wait
    wait_s: float | None = None  # judge again after this many seconds (the settle timer)
    wanted: int | None = None  # no round can train: waiting for this many nodes...
    have: int = 0  # ...of which this many are alive


def exhausted(r: Round, limits: Limits) -> bool:
    """A round with more consecutive failures than restarts allowed: the job has failed."""
    return r.failures > limits.max_restarts


def judge(
    current: Round | None,
    alive: Sequence[str],
    failed: Collection[str],
    np: int | None,
    limits: Limits,
    stable_for: float,
) -> Verdict:
    """The verdict on the current round given the alive nodes (join order), the members whose
    workers failed in it, the `np` key and how long the alive set has been stable."""
    broken: str | None = None
    if current is not None:
        live = set(alive)
        if any(m not in live for m in current.members):
            broken = "member left"
        elif any(m in failed for m in current.members):
            broken = "a member's workers failed"
        if exhausted(current, limits):
            return Verdict(broken=broken or "restart budget used up")
    desired = desired_size(np, limits.lo, limits.hi)
    timeout = limits.timeout(np)
    ready = readiness(len(alive), desired, limits.lo, stable_for, timeout)
    if ready.size is None:
        if current is None or broken is not None:
            wanted = desired if timeout > 0 else limits.lo  # without a wait for the wanted size, MIN is enough
            return Verdict(broken, None, ready.wait_s, wanted, len(alive))
        return Verdict(None, None, ready.wait_s)
    previous = current.members if current is not None else ()
    members = assign_ranks(previous, alive, ready.size)
    if current is None:
        return Verdict(proposal=Round(0, members, 0))
    if broken is None and members == current.members:
        return Verdict()
    failures = current.failures + 1 if members == current.members else 0
    return Verdict(broken, Round(current.round + 1, members, failures))
