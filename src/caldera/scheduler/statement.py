"""A statement: the undo log of one tentative decision (Volcano's Statement).

Each operation changes the session's state at once and fires the same plugin
events a real change would (`on_allocate` / `on_deallocate`), so running totals
such as DRF shares stay right. `discard` undoes the operations in reverse order,
firing the inverse events; `commit` turns them into the cycle's decisions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from caldera.scheduler.framework import ON_ALLOCATE, ON_DEALLOCATE
from caldera.scheduler.state import ALLOCATED, TaskInfo, TaskStatus
from caldera.utils.records import immutable

if TYPE_CHECKING:
    from caldera.scheduler.session import Session


@immutable
class Operation:
    kind: str  # allocate | pipeline | evict
    task: TaskInfo
    before: TaskStatus
    before_node: int
    reason: str = ""  # for evictions: Preempt | Reclaim
    message: str = ""


class Statement:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.ops: list[Operation] = []

    def allocate(self, task: TaskInfo, node: int) -> None:
        self._do(Operation("allocate", task, task.status, task.node), TaskStatus.ALLOCATED, node)

    def pipeline(self, task: TaskInfo, node: int) -> None:
        self._do(Operation("pipeline", task, task.status, task.node), TaskStatus.PIPELINED, node)

    def evict(self, task: TaskInfo, reason: str, message: str) -> None:
        self._do(Operation("evict", task, task.status, task.node, reason, message), TaskStatus.RELEASING, task.node)

    def _do(self, op: Operation, status: TaskStatus, node: int) -> None:
        was_allocated = op.task.status in ALLOCATED
        self.ssn.state.move(op.task, status, node)
        self.ops.append(op)
        self._fire(op.task, was_allocated, status in ALLOCATED)

    def _fire(self, task: TaskInfo, before: bool, after: bool) -> None:
        if after and not before:
            self.ssn.call(ON_ALLOCATE, task)
        elif before and not after:
            self.ssn.call(ON_DEALLOCATE, task)

    def discard(self) -> None:
        for op in reversed(self.ops):
            was_allocated = op.task.status in ALLOCATED
            self.ssn.state.move(op.task, op.before, op.before_node)
            self._fire(op.task, was_allocated, op.before in ALLOCATED)
        self.ops.clear()

    def commit(self) -> None:
        """Make the operations real: binds, nominations and evictions for the executor to carry out."""
        state, result = self.ssn.state, self.ssn.result
        for op in self.ops:
            t = op.task
            if op.kind == "allocate":
                state.move(t, TaskStatus.BINDING, t.node)
                result.binds.append(Bind(t.key, state.node_names[t.node]))
            elif op.kind == "pipeline":
                result.nominations.append(Bind(t.key, state.node_names[t.node]))
            else:
                result.evictions.append(Evict(t.key, state.node_names[t.node], op.reason, op.message))
        if any(op.kind == "evict" for op in self.ops):
            state.version += 1  # resources will come back
        self.ops.clear()

    def merge(self, other: Statement) -> None:
        """Take over `other`'s operations (a per-node trial that worked)."""
        self.ops.extend(other.ops)
        other.ops.clear()


@immutable
class Bind:
    pod: str  # namespace/name
    node: str


@dataclass(frozen=True, slots=True)
class Evict:
    pod: str
    node: str
    reason: str  # Preempt | Reclaim
    message: str
