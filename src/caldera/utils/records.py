"""`immutable`: a record to the type checker, built at run time without a frozen dataclass's cost.

A frozen dataclass's `__init__` sets every field through `object.__setattr__`, three times
the cost of a plain one; the records the control plane makes per pod and per event (events,
requests, plans, binds: dozens per job, thousands of jobs a second in the simulator) pay it
on every job. `@immutable` is `@dataclass(frozen=True, slots=True)` to mypy (`--strict` refuses
any assignment to a field) and `@dataclass(slots=True, unsafe_hash=True)` at run time: equal
and hashed by their fields alike. Everything else immutable stays a frozen dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def immutable(cls: type[T]) -> type[T]:
    return dataclass(slots=True, unsafe_hash=True)(cls)
