"""Extension points: a table from point to reducer, and the plugin base class.

A plugin implements a point by defining a method with the point's name. The
session collects, per point, the implementing plugins tier by tier, and
`Session.call(point, ...)` applies the point's reducer. Reducers reproduce
Volcano's aggregation rules:

| reducer   | rule                                                                              |
|-----------|-----------------------------------------------------------------------------------|
| order     | sort keys concatenated in tier order: the first plugin that tells two apart decides |
| all       | every plugin must agree (AND); no plugin: True                                    |
| any       | some plugin says yes (OR); no plugin: False                                       |
| vote      | Permit=1 / Abstain=0 / Reject=-1: any Reject → False; a tier with a Permit → True; else True |
| starving  | the first tier with any implementation decides (AND within it); none: True        |
| intersect | victims: intersect within a tier; the first tier with an answer wins; none: []    |
| filter    | victims: every plugin narrows the list in turn, whatever the tiers (hard limits)  |
| mask      | node masks ANDed; each failing mask carries the reason the nodes were rejected    |
| sum       | node scores added                                                                 |
| each      | every plugin is called for its effect                                             |
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import CodeType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from caldera.scheduler.session import Session
    from caldera.scheduler.state import TaskInfo

R = TypeVar("R")
Hook = Callable[..., Any]
Tiers = list[list[Hook]]

PERMIT, ABSTAIN, REJECT = 1, 0, -1

BoolMask = npt.NDArray[np.bool_]
Scores = npt.NDArray[np.float64]
Indices = npt.NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class Rejection:
    """Nodes a predicate rejected (`mask` False) and why, in kube-scheduler's words."""

    mask: BoolMask
    reason: str


def _order(tiers: Tiers, args: tuple[object, ...]) -> tuple[object, ...]:
    key: list[object] = []
    for tier in tiers:
        for hook in tier:
            key.extend(hook(*args))
    return tuple(key)


def _all(tiers: Tiers, args: tuple[object, ...]) -> bool:
    # Loops rather than all() over a generator: this is asked several times per job and pod.
    for tier in tiers:
        for hook in tier:
            if not hook(*args):
                return False
    return True


def _any(tiers: Tiers, args: tuple[object, ...]) -> bool:
    for tier in tiers:
        for hook in tier:
            if hook(*args):
                return True
    return False


def _vote(tiers: Tiers, args: tuple[object, ...]) -> bool:
    for tier in tiers:
        permitted = False
        for hook in tier:
            v = hook(*args)
            if v < 0:
                return False
            permitted = permitted or v > 0
        if permitted:
            return True
    return True


def _starving(tiers: Tiers, args: tuple[object, ...]) -> bool:
    for tier in tiers:
        if tier:
            return all(bool(hook(*args)) for hook in tier)
    return True


def _intersect(tiers: Tiers, args: tuple[object, ...]) -> list[TaskInfo]:
    for tier in tiers:
        result: list[TaskInfo] | None = None
        for hook in tier:
            victims: list[TaskInfo] | None = hook(*args)
            if victims is None:
                continue
            if result is None:
                result = list(victims)
            else:
                keep = {id(v) for v in victims}
                result = [v for v in result if id(v) in keep]
        if result is not None:
            return result
    return []


def _filter(tiers: Tiers, args: tuple[object, ...]) -> list[TaskInfo]:
    evictor, candidates = args
    victims = cast("list[TaskInfo]", candidates)
    for tier in tiers:
        for hook in tier:
            victims = hook(evictor, victims)
    return list(victims)


def _mask(tiers: Tiers, args: tuple[object, ...]) -> list[Rejection]:
    out: list[Rejection] = []
    for tier in tiers:
        for hook in tier:
            out.extend(hook(*args))
    return out


def _sum(tiers: Tiers, args: tuple[object, ...]) -> Scores | None:
    total: Scores | None = None
    for tier in tiers:
        for hook in tier:
            s = hook(*args)
            if s is not None:
                total = s.copy() if total is None else total + s
    return total


def _each(tiers: Tiers, args: tuple[object, ...]) -> None:
    for tier in tiers:
        for hook in tier:
            hook(*args)


@dataclass(frozen=True, slots=True)
class Point(Generic[R]):
    """An extension point: the plugin method name, its reducer and Volcano's switch for it."""

    name: str
    reduce: Callable[[Tiers, tuple[object, ...]], R]
    flag: str = ""  # e.g. enableJobOrder: a plugin argument that turns the point off for that plugin


JOB_ORDER: Point[tuple[object, ...]] = Point("job_order", _order, "enableJobOrder")
QUEUE_ORDER: Point[tuple[object, ...]] = Point("queue_order", _order, "enableQueueOrder")
TASK_ORDER: Point[tuple[object, ...]] = Point("task_order", _order, "enableTaskOrder")
JOB_VALID: Point[bool] = Point("job_valid", _all, "enableJobValid")
JOB_READY: Point[bool] = Point("job_ready", _all, "enableJobReady")
JOB_PIPELINED: Point[bool] = Point("job_pipelined", _vote, "enableJobPipelined")
JOB_ENQUEUEABLE: Point[bool] = Point("job_enqueueable", _vote, "enableJobEnqueued")
JOB_ENQUEUED: Point[None] = Point("job_enqueued", _each, "enableJobEnqueued")
JOB_STARVING: Point[bool] = Point("job_starving", _starving, "enableJobStarving")
JOB_RESERVE: Point[bool] = Point("job_reserve", _any, "enableJobReserve")
OVERUSED: Point[bool] = Point("overused", _any, "enabledOverused")
ALLOCATABLE: Point[bool] = Point("allocatable", _all, "enabledAllocatable")
PREEMPTIVE: Point[bool] = Point("preemptive", _all, "enablePreemptive")
PREEMPTABLE: Point[list[TaskInfo]] = Point("preemptable", _intersect, "enablePreemptable")
RECLAIMABLE: Point[list[TaskInfo]] = Point("reclaimable", _intersect, "enableReclaimable")
# The queue plugins' deserved shares bound what reclaim may take from each queue. Not a tiered vote: with
# conformance answering in the first tier, a vote in a later tier would never be asked (the reclaim
# ping-pong of volcano#561 and #3869, queues at their share taking turns to evict each other).
RECLAIM_LIMIT: Point[list[TaskInfo]] = Point("reclaim_limit", _filter, "enableReclaimable")
PREDICATE: Point[list[Rejection]] = Point("predicate", _mask, "enablePredicate")
NODE_ORDER: Point[Scores | None] = Point("node_order", _sum, "enableNodeOrder")
ON_ALLOCATE: Point[None] = Point("on_allocate", _each)
ON_DEALLOCATE: Point[None] = Point("on_deallocate", _each)
ON_SESSION_OPEN: Point[None] = Point("on_session_open", _each)
ON_SESSION_CLOSE: Point[None] = Point("on_session_close", _each)

POINTS: tuple[Point[Any], ...] = (
    JOB_ORDER,
    QUEUE_ORDER,
    TASK_ORDER,
    JOB_VALID,
    JOB_READY,
    JOB_PIPELINED,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    JOB_STARVING,
    JOB_RESERVE,
    OVERUSED,
    ALLOCATABLE,
    PREEMPTIVE,
    PREEMPTABLE,
    RECLAIMABLE,
    RECLAIM_LIMIT,
    PREDICATE,
    NODE_ORDER,
    ON_ALLOCATE,
    ON_DEALLOCATE,
    ON_SESSION_OPEN,
    ON_SESSION_CLOSE,
)


_IMPLEMENTS: dict[type[Plugin], frozenset[Point[Any]]] = {}
# (plugin class, id of its arguments) → (the arguments, what the class made of them); see `Plugin.settings`.
_SETTINGS: dict[tuple[type[Plugin], int, CodeType], tuple[Mapping[str, object], object]] = {}


class Plugin:
    """Base of scheduler plugins. Subclasses set `name` and define methods named after points.

    A plugin is built once per session with the session and its arguments from
    the configuration; it may keep running totals, updated by `on_allocate` and
    `on_deallocate`, which statements fire for every operation and its undo.
    """

    name: ClassVar[str] = ""
    # Whether its `node_order` score of a node depends only on that node's column of the node arrays, the
    # task's request and the plugin's arguments. The leading local plugins' summed scores are kept across pods
    # and cycles (placement.py); a non-local one, and every plugin after it, is asked at each placement.
    local_scores: ClassVar[bool] = False

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        self.ssn = ssn
        self.args = args

    @classmethod
    def implements(cls) -> frozenset[Point[Any]]:
        """The points this plugin class defines a method for (computed once per class)."""
        found = _IMPLEMENTS.get(cls)
        if found is None:
            found = _IMPLEMENTS[cls] = frozenset(p for p in POINTS if callable(getattr(cls, p.name, None)))
        return found

    def settings(self, parse: Callable[[Plugin], R]) -> R:
        """What `parse` makes of this plugin's arguments, worked out once per configuration: a plugin is
        built every cycle, its arguments stay. Keeping the arguments object keeps its id from being reused;
        `parse`'s code is in the key, so two calls of one plugin with different parsers get each their own."""
        key = (type(self), id(self.args), parse.__code__)
        found = _SETTINGS.get(key)
        if found is None or found[0] is not self.args:
            if len(_SETTINGS) > 1024:
                _SETTINGS.clear()
            found = _SETTINGS[key] = (self.args, parse(self))
        return cast(R, found[1])

    # Typed access to arguments, which come from YAML.
    def arg_float(self, key: str, default: float) -> float:
        v = self.args.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            raise ValueError(f"plugin {self.name}: argument {key} must be a number")
        return float(v)

    def arg_bool(self, key: str, default: bool) -> bool:
        v = self.args.get(key, default)
        if isinstance(v, str):
            return v.strip().lower() in ("true", "1", "yes")
        return bool(v)
