"""proportion: queues share the cluster by weight (Volcano's water-filling), capped by capability.

Each queue's `deserved` is grown in rounds: the remaining resources are split
by weight among queues that still want more, and a queue's deserved never
exceeds its request (what its jobs ask for), its capability or the cluster
minus others' guarantees, nor falls below its own guarantee. So idle capacity
goes to whoever asks for it, and a queue above its deserved share gives back
when another queue needs its share (reclaim).

`proportion.borrow: true` (caldera-default) lets a queue place jobs beyond its
deserved share, up to its capability, on what the queues at or under their
share leave idle (allocate serves queues in share order, so they come first):
a gang bigger than its queue's share runs instead of waiting while the cluster
idles, and what it borrowed is reclaimable when another queue needs its share,
as Kueue's cohorts borrow. Preemption within a queue and reclaim still only act
for a queue within its deserved share; with borrowing, the workers its elastic
jobs run above their minAvailable do not count towards it (they are lent, and
given back to any job that needs them), so a queue whose share its own elastic
jobs fill may still reclaim for a new gang. Lent the other way too: reclaim may
take any job's workers above its minAvailable, whatever its queue's share (a
gang's minimum before anyone's extra workers, as Pollux reallocates what runs
above a job's minimum). Without it a queue over its share kept its new jobs
waiting, or running at their minimum, while other queues' elastic jobs ran at
their maximum (on the elastic Philly samples, seed 3: 1.25 h average JCT
against las's 0.47 h; with it 0.51 h).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import cast

import numpy as np

from caldera.core import objects as o
from caldera.scheduler.framework import PERMIT, REJECT, Plugin
from caldera.scheduler.session import Session
from caldera.scheduler.state import READY, ClusterState, JobInfo, QueueInfo, TaskInfo, Vector

_EPS = 1e-9


def real_capabilities(state: ClusterState) -> dict[str, Vector]:
    """Per queue: min(capability, cluster total − the guarantees of all other queues).

    Shared by every session until a node or a queue changes (`ClusterState.queue_version`):
    callers must not modify the vectors."""
    key = (state.node_version, state.queue_version, len(state.resources))
    found = state.derived.get("capabilities")
    if found is not None and found[0] == key:
        return cast(dict[str, Vector], found[1])
    total = state.total
    guarantees = sum((q.guarantee for q in state.queues.values()), np.zeros_like(total))
    caps = {
        q.name: np.minimum(q.capability, np.maximum(total - (guarantees - q.guarantee), 0.0))
        for q in state.queues.values()
    }
    state.derived["capabilities"] = (key, caps)
    return caps


def fits(request: Vector, limit: Vector, dims: Vector | None = None) -> bool:
    """request ≤ limit on the dimensions `dims` asks for (all requested dimensions if None).

    Over a handful of dimensions, Python floats (the same IEEE arithmetic) beat numpy's per-call cost."""
    asked = request.tolist()
    wanted = asked if dims is None else dims.tolist()
    return all(r <= lim + _EPS for r, lim, w in zip(asked, limit.tolist(), wanted, strict=True) if w > 0)


class Yielding:
    """What lower-priority jobs of a job's queue hold that the job, once admitted, may take: their
    Inqueue reservations (allocate places it first) and, when preempt runs, what they are allocated.

    Counting it as room at enqueue is what lets a high-priority job in while its queue is full, so that
    preempt can act for it (Volcano rejects it there: priority inversion at enqueue, volcano#3670).
    The per-queue, per-priority sums are built once per session, on first use.
    """

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self._held: dict[str, dict[int, Vector]] | None = None

    def of(self, job: JobInfo) -> Vector:
        if self._held is None:
            self._held = self._build()
        out = np.zeros(len(self.ssn.state.resources))
        for priority, held in self._held.get(job.queue, {}).items():
            if priority < job.priority:
                out += held
        return out

    def _build(self) -> dict[str, dict[int, Vector]]:
        preempt = "preempt" in self.ssn.config.actions
        table: dict[str, dict[int, Vector]] = {}
        for j in self.ssn.state.jobs.values():
            held = j.allocated if preempt else None
            if j.pg_phase == o.PG_INQUEUE:
                held = j.min_resources if held is None else held + j.min_resources
            if held is not None and held.any():
                by_priority = table.setdefault(j.queue, {})
                by_priority[j.priority] = by_priority.get(j.priority, 0.0) + held
        return table


def surplus(job: JobInfo) -> list[TaskInfo]:
    """The job's running tasks above its minAvailable (an elastic job's extra workers), highest index first."""
    spare = job.count(READY) - job.min_available
    if spare <= 0:
        return []
    ready = [t for t in job.tasks.values() if t.status in READY]
    return sorted(ready, key=lambda t: -t.index)[:spare]


def reclaim_victims(
    ssn: Session, deserved: Mapping[str, Vector], candidates: list[TaskInfo], *, lent: bool = False
) -> list[TaskInfo]:
    """Victims only from queues above their deserved share, taken while the queue stays above it; with
    `lent`, also the workers any job runs above its minAvailable, whatever its queue's share."""
    left: dict[str, Vector] = {}
    within: set[str] = set()  # queues found within their share: nothing of theirs is taken (nor re-checked)
    extra: dict[str, set[str]] = {}  # job key → keys of its tasks above minAvailable
    victims = []
    for c in candidates:
        if lent:
            above = extra.get(c.job.key)
            if above is None:
                above = extra[c.job.key] = {t.key for t in surplus(c.job)}
            if c.key in above:
                victims.append(c)
                continue
        name = c.job.queue
        if name in within:
            continue
        q = ssn.state.queues.get(name)
        if q is None:
            continue
        allocated = left.get(name)
        if allocated is None:
            allocated = q.allocated.copy()
        d = deserved.get(name)
        if d is None or not fits(allocated, d, allocated):
            allocated = allocated - c.req
            victims.append(c)
        else:
            within.add(name)  # its allocation stays as it is from here on, so the verdict stays too
        left[name] = allocated
    return victims


def enqueue_vote(ssn: Session, job: JobInfo, capability: Mapping[str, Vector], yielding: Yielding) -> int:
    """Admit a job to an Open queue while its minimum fits the queue's capability, counting as room
    what lower-priority jobs of the queue hold or reserve (they can be preempted)."""
    queue = ssn.state.queues.get(job.queue)
    if queue is None or queue.state != o.QUEUE_OPEN:
        return REJECT
    need = job.min_resources + queue.allocated + queue.inqueue
    if fits(need, capability[queue.name], job.min_resources):
        return PERMIT
    need = need - yielding.of(job)
    return PERMIT if fits(need, capability[queue.name], job.min_resources) else REJECT


class Deserved(Mapping[str, Vector]):
    """Each queue's deserved share this session (Volcano's water-filling), computed on first use.

    When the queues' requests all fit the cluster at once (the usual case of a cluster that is
    not full: `state.request_total` tells at once), a queue deserves what it asks for, within its
    capability and above its guarantee, and only the queues asked about are computed; otherwise
    the rounds run once, over every queue that asks for something or is guaranteed something.
    Requests do not change within a session (allocating moves a task between unfinished states,
    and quantities are integers in the scheduler's units), so computing a queue late is the same
    as computing it first."""

    def __init__(self, state: ClusterState, capability: Mapping[str, Vector]) -> None:
        self.state = state
        self.capability = capability
        self.queues = dict(state.queues)  # as the session first asked: a queue created later has none
        self.shares: dict[str, Vector] = {}
        asked = zip(state.request_total.tolist(), state.total.tolist(), strict=True)
        self.fits_all = all(r <= t + _EPS for r, t in asked)
        if not self.fits_all:
            self.shares = self._water_fill()

    def __getitem__(self, name: str) -> Vector:
        found = self.shares.get(name)
        if found is not None:
            return found
        q = self.queues[name]  # KeyError for a queue the session did not know: no share
        if self.fits_all:  # everyone's ask fits the cluster: each queue deserves what it asks for (within its cap)
            found = np.maximum(np.minimum(q.request, self.capability[name]), np.minimum(q.guarantee, q.request))
        else:  # asks for nothing and is guaranteed nothing: left out of the rounds
            found = np.zeros(len(self.state.resources))
        self.shares[name] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.queues)

    def __len__(self) -> int:
        return len(self.queues)

    def _water_fill(self) -> dict[str, Vector]:
        """Volcano's rounds, over all queues at once: rows are queues, columns resources."""
        state = self.state
        queues = [q for q in self.queues.values() if q.request.any() or q.guarantee.any()]
        request = np.array([q.request for q in queues])
        cap = np.array([self.capability[q.name] for q in queues])
        floor = np.minimum(np.array([q.guarantee for q in queues]), request)
        weight = np.array([float(q.weight) for q in queues])
        deserved = np.zeros_like(request)
        hungry = np.ones(len(queues), dtype=bool)
        remaining = state.total.copy()
        for _ in range(64):
            total_weight = weight[hungry].sum()
            if total_weight == 0:
                break
            share = np.outer(np.where(hungry, weight / total_weight, 0.0), remaining)
            new = np.maximum(np.minimum(np.minimum(deserved + share, cap), request), floor)
            new[~hungry] = deserved[~hungry]
            done = np.all(new >= request - _EPS, axis=1) | np.all(np.isclose(new, deserved), axis=1)
            remaining = np.maximum(remaining - (new - deserved).sum(axis=0), 0.0)
            deserved = new
            hungry &= ~done
            if not hungry.any() or np.all(remaining <= _EPS):
                break
        return {q.name: deserved[i] for i, q in enumerate(queues)}


class Proportion(Plugin):
    name = "proportion"

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        super().__init__(ssn, args)
        self._capability: dict[str, Vector] | None = None
        self._deserved: Deserved | None = None
        self._lenders: dict[str, list[JobInfo]] | None = None
        self.yielding = Yielding(ssn)
        self.borrow = self.settings(lambda p: p.arg_bool("proportion.borrow", False))

    @property
    def capability(self) -> dict[str, Vector]:
        if self._capability is None:
            self._capability = real_capabilities(self.ssn.state)
        return self._capability

    @property
    def deserved(self) -> Deserved:
        """Fixed for the session, computed on first use (most cycles never ask)."""
        if self._deserved is None:
            self._deserved = Deserved(self.ssn.state, self.capability)
        return self._deserved

    def share(self, queue: QueueInfo) -> float:
        """max over resources of allocated ÷ deserved (0 where nothing is deserved)."""
        d = self.deserved.get(queue.name)
        if d is None:
            return 0.0
        pairs = zip(queue.allocated.tolist(), d.tolist(), strict=True)
        return max((a / b if b > 0 else 0.0 for a, b in pairs), default=0.0)

    def queue_order(self, queue: QueueInfo) -> tuple[object, ...]:
        return (-queue.priority, self.share(queue))

    def overused(self, queue: QueueInfo) -> bool:
        if self.borrow:
            return False  # it may borrow what others leave idle; allocate serves it after them
        d = self.deserved.get(queue.name)
        if d is None:
            return True
        return all(x <= a + _EPS for x, a in zip(d.tolist(), queue.allocated.tolist(), strict=True))

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if self.borrow:
            if queue.state != o.QUEUE_OPEN and not queue.allocated.any() and not task.job.allocated.any():
                return False
            return fits(queue.allocated + task.req, self.capability[queue.name], task.req)
        return self.within_share(queue, task)

    def within_share(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if queue.state != o.QUEUE_OPEN and not queue.allocated.any() and not task.job.allocated.any():
            return False
        return fits(queue.allocated + task.req, self.deserved.get(queue.name, queue.allocated), task.req)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if self.borrow:  # what its elastic jobs borrowed above their minimums does not count against its share
            lent = self._lent(queue.name)
            if lent is not None:
                d = self.deserved.get(queue.name, queue.allocated)
                return fits(queue.allocated - lent + task.req, d, task.req)
        return self.within_share(queue, task)

    def _lent(self, name: str) -> Vector | None:
        """The resources the queue's jobs hold above their minAvailable (elastic workers), None if nothing."""
        lent: Vector | None = None
        for job in self.lenders.get(name, ()):
            above = surplus(job)
            if not above:
                continue
            extra = sum((t.req for t in above), np.zeros_like(job.allocated))
            lent = extra if lent is None else lent + extra
        return lent

    @property
    def lenders(self) -> dict[str, list[JobInfo]]:
        """By queue, the jobs that can run workers above their minAvailable (more tasks than it): the only
        ones `_lent` looks at. Fixed for the session, found on first use: `preemptive` is asked for every
        starving job, and a pass over every job each time made a full cluster's cycles quadratic."""
        if self._lenders is None:
            self._lenders = {}
            for job in self.ssn.state.jobs.values():
                if len(job.tasks) > job.min_available:
                    self._lenders.setdefault(job.queue, []).append(job)
        return self._lenders

    def reclaim_limit(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return reclaim_victims(self.ssn, self.deserved, candidates, lent=self.borrow)

    def job_enqueueable(self, job: JobInfo) -> int:
        return enqueue_vote(self.ssn, job, self.capability, self.yielding)
