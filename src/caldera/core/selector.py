"""Label selectors as kubectl writes them (`-l app=web,tier!=db,env in (a,b),!canary`), and matching labels.

The grammar is Kubernetes' (`k8s.io/apimachinery/pkg/labels/selector.go`): requirements
separated by commas (a comma inside parentheses separates values); each one is `k`
(exists), `!k` (does not exist), `k=v` or `k==v`, `k!=v` (absent counts as not equal),
`k in (v1,v2)`, `k notin (v1,v2)` (absent counts), `k>n`, `k<n` (integers). All must
hold. Parsing is pure and total: bad text raises ValueError naming the requirement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from caldera.core.podspec import SelectorRequirement

_KEY = re.compile(r"^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$")
_VALUE = re.compile(r"^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?$")
_SET = re.compile(r"^(?P<key>\S+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_BINARY = re.compile(r"^(?P<key>[^=!<>\s]+)\s*(?P<op>==|=|!=|>|<)\s*(?P<value>[^=!<>\s]*)$")


@dataclass(frozen=True, slots=True)
class Selector:
    """Requirements that must all hold; the empty selector matches everything."""

    requirements: tuple[SelectorRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        found = labels or {}
        return all(r.matches(found) for r in self.requirements)


def parse_selector(text: str) -> Selector:
    """The selector `text` means; raises ValueError for text kubectl would refuse."""
    requirements = []
    for part in _split(text):
        if not part.strip():
            raise ValueError(f"{text!r}: an empty requirement (two commas in a row, or one at an end)")
        requirements.append(_requirement(part))
    return Selector(tuple(requirements))


def _split(text: str) -> list[str]:
    """`text` cut at the commas outside parentheses."""
    if not text.strip():
        return []
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"{text!r}: ')' without '('")
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"{text!r}: '(' without ')'")
    parts.append(text[start:])
    return parts


def _requirement(part: str) -> SelectorRequirement:
    item = part.strip()
    if m := _SET.match(item):
        values = tuple(v.strip() for v in m["values"].split(","))
        if not any(values):
            raise ValueError(f"{item!r}: a set needs at least one value")
        return SelectorRequirement(_key(m["key"], item), "In" if m["op"] == "in" else "NotIn", _values(values, item))
    if item.startswith("!"):
        return SelectorRequirement(_key(item[1:].strip(), item), "DoesNotExist")
    if m := _BINARY.match(item):
        op, value = m["op"], m["value"]
        key = _key(m["key"], item)
        if op in (">", "<"):
            if not value.lstrip("-").isdigit():
                raise ValueError(f"{item!r}: {op} compares with an integer")
            return SelectorRequirement(key, "Gt" if op == ">" else "Lt", (value,))
        return SelectorRequirement(key, "NotIn" if op == "!=" else "In", _values((value,), item))
    return SelectorRequirement(_key(item, item), "Exists")


def _key(key: str, item: str) -> str:
    if not _KEY.match(key) or len(key.rpartition("/")[2]) > 63:
        raise ValueError(f"{item!r}: {key!r} is not a label key (name or prefix/name: letters, digits, '-', '_', '.')")
    return key


def _values(values: tuple[str, ...], item: str) -> tuple[str, ...]:
    for v in values:
        if len(v) > 63 or not _VALUE.match(v):
            raise ValueError(f"{item!r}: {v!r} is not a label value (at most 63 letters, digits, '-', '_', '.')")
    return values
