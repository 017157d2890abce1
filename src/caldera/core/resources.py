"""Resource lists in the scheduler's units, and arithmetic over them.

Like Volcano, every resource is held as a float in one unit per kind: CPU and
extended resources (`nvidia.com/gpu`, ...) in milli-units, memory-like resources
(`memory`, `ephemeral-storage`, `hugepages-*`) in bytes, and `pods` as a count.
In these units every realistic request is an integer, so comparisons are exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from functools import lru_cache

from caldera.core.quantity import QuantityError, format_quantity, parse_quantity

CPU = "cpu"
MEMORY = "memory"
GPU = "nvidia.com/gpu"
PODS = "pods"

_BYTES = ("memory", "ephemeral-storage", "storage")


def is_bytes(name: str) -> bool:
    return name in _BYTES or name.startswith("hugepages-")


def to_units(name: str, quantity: object) -> float:
    """The scheduler's value for `quantity` of resource `name`."""
    q = parse_quantity(quantity)
    if is_bytes(name) or name == PODS:
        return float(q)
    return float(q * 1000)


@lru_cache(maxsize=4096)  # a daemon formats the same few requests and capacities for every pod and node it writes
def from_units(name: str, value: float) -> str:
    """The Kubernetes quantity text for a scheduler value."""
    if is_bytes(name):
        return format_quantity(Decimal(str(value)), binary=True)
    if name == PODS:
        return format_quantity(Decimal(str(value)))
    return format_quantity(Decimal(str(value)) / 1000)


def parse_resource_list(raw: Mapping[str, object]) -> dict[str, float]:
    """A Kubernetes ResourceList (`{cpu: 500m, memory: 1Gi}`) in scheduler units.

    Raises QuantityError naming the resource whose quantity is malformed."""
    out: dict[str, float] = {}
    for name, q in raw.items():
        try:
            out[str(name)] = to_units(str(name), q)
        except QuantityError as e:
            raise QuantityError(f"{name}: {e}") from e
    return out


def format_resource_list(res: Mapping[str, float]) -> dict[str, str]:
    return {name: from_units(name, v) for name, v in sorted(res.items())}


def add(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0.0) + v
    return out


def sub(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0.0) - v
    return out


def scale(a: Mapping[str, float], factor: float) -> dict[str, float]:
    return {k: v * factor for k, v in a.items()}


def less_equal(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    """Every resource of `a` is at most its amount in `b` (absent in `b` means 0)."""
    return all(v <= b.get(k, 0.0) for k, v in a.items() if v > 0)


def total(items: Iterable[Mapping[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in items:
        for k, v in r.items():
            out[k] = out.get(k, 0.0) + v
    return out
