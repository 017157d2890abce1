"""Kubernetes resource quantities (`500m`, `32Gi`, `1e3`, `2`), parsed exactly.

A quantity is a decimal number with an optional suffix: binary SI (Ki, Mi, Gi,
Ti, Pi, Ei), decimal SI (n, u, m, k, M, G, T, P, E) or a decimal exponent
(`e3`, `E-2`). Parsing goes through `Decimal` so that `0.1` and `100m` agree.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([a-zA-Z]*|[eE][+-]?\d+)$")


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


MAX_QUANTITY = Decimal(2**63 - 1)  # Kubernetes' bound: a quantity fits a signed 64-bit integer


def parse_quantity(value: object) -> Decimal:
    """The exact value of a quantity given as text or a number (at most MAX_QUANTITY either way)."""
    parsed = _parse_quantity(value)
    if not parsed.is_finite() or abs(parsed) > MAX_QUANTITY:
        raise QuantityError(f"{value!r} is too large for a quantity (at most {MAX_QUANTITY})")
    return parsed


def _parse_quantity(value: object) -> Decimal:
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity")
    match = _QUANTITY.match(value.strip())
    if not match:
        raise QuantityError(f"{value!r} is not a quantity (expected a number with an optional suffix like 500m, 4Gi)")
    number, suffix = match.groups()
    try:
        base = Decimal(number)
    except InvalidOperation as e:  # pragma: no cover - the regex admits only decimals
        raise QuantityError(f"{value!r} is not a quantity") from e
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix in _DECIMAL:
        return base * _DECIMAL[suffix]
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return base.scaleb(int(suffix[1:]))
    raise QuantityError(f"{value!r} has an unknown suffix {suffix!r}")


def format_quantity(value: Decimal | float, binary: bool = False) -> str:
    """A short human form: `binary` picks Ki/Mi/Gi (memory), else m/k/M/G."""
    v = Decimal(str(value)) if isinstance(value, float) else value
    if binary:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = _BINARY[suffix]
            if v != 0 and v % unit == 0:
                return f"{int(v / unit)}{suffix}"
        return _plain(v)
    if v != 0 and v == v.to_integral_value():
        return _plain(v)
    milli = v * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return _plain(v)


def _plain(v: Decimal) -> str:
    if v == v.to_integral_value():
        return str(int(v))
    return format(v.normalize(), "f")
