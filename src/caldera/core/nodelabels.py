"""Node labels and taints as people write them: `caldera up --node-labels/--node-taints`, `caldera node label|taint`.

- a label is `K=V` (kubectl label's form), its removal `K-`;
- a taint is `K[=V]:EFFECT` (kubectl taint's form, EFFECT one of NoSchedule,
  PreferNoSchedule, NoExecute), its removal `K-` or `K:EFFECT-`;
- `caldera up` takes a comma-separated list for every node, or for one node with a
  `NODE:` prefix (`gpu=a100,zone=a`, `node-1:gpu=a100`, `node-1:gpu=a100:NoSchedule`).
Keys and values follow Kubernetes' label syntax. Parsing is pure; bad text raises
ValueError naming the item and the rule.
"""

from __future__ import annotations

from caldera.core.podspec import Taint
from caldera.core.selector import parse_selector

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# Labels the embedded cluster sets and reads itself: changing them would break it.
RESERVED_PREFIXES = ("caldera.dev/", "kubernetes.io/hostname")


def parse_label(text: str) -> tuple[str, str | None]:
    """`K=V` as (K, V); `K-` as (K, None), a removal."""
    item = text.strip()
    if item.endswith("-") and "=" not in item:
        return _key(item[:-1], item), None
    key, eq, value = item.partition("=")
    if not eq:
        raise ValueError(f"{item!r} is not a label K=V (or K- to remove it)")
    _check_pair(key, value, item)
    return key, value


def parse_taint(text: str) -> Taint:
    """`K[=V]:EFFECT` as a Taint."""
    item = text.strip()
    head, colon, effect = item.rpartition(":")
    if not colon or effect not in EFFECTS:
        raise ValueError(f"{item!r} is not a taint K[=V]:EFFECT (EFFECT: {', '.join(EFFECTS)})")
    key, _, value = head.partition("=")
    _check_pair(key, value, item)
    return Taint(key=key, value=value, effect=effect)


def parse_taint_removal(text: str) -> tuple[str, str]:
    """`K-` or `K:EFFECT-` as (K, EFFECT or "" for every effect)."""
    item = text.strip().removesuffix("-")
    key, colon, effect = item.partition(":")
    if colon and effect not in EFFECTS:
        raise ValueError(f"{text!r}: {effect!r} is not one of {', '.join(EFFECTS)}")
    return _key(key, text), effect


def node_labels_flag(text: str) -> tuple[str | None, dict[str, str]]:
    """`caldera up --node-labels [NODE:]K=V[,K=V...]` as (node or None for all, labels)."""
    node, _, items = text.rpartition(":") if text.count(":") == 1 else ("", "", text)
    labels: dict[str, str] = {}
    for item in items.split(","):
        key, value = parse_label(item)
        if value is None:
            raise ValueError(f"{item!r}: a new node's labels are K=V, there is nothing to remove")
        labels[key] = value
    return node or None, labels


def node_taints_flag(text: str) -> tuple[str | None, list[Taint]]:
    """`caldera up --node-taints [NODE:]K[=V]:EFFECT[,...]` as (node or None for all, taints)."""
    items = text.split(",")
    node = None
    if items and items[0].count(":") == 2:
        node, _, items[0] = items[0].partition(":")
    return node, [parse_taint(item) for item in items]


def reserved(key: str) -> bool:
    return key.startswith(RESERVED_PREFIXES)


def _key(key: str, item: str) -> str:
    _check_pair(key, "", item)
    return key


def _check_pair(key: str, value: str, item: str) -> None:
    # A label K=V is what an equality selector matches: the selector's checks are the label's.
    try:
        parse_selector(f"{key}={value}")
    except ValueError as e:
        raise ValueError(f"{item!r}: {str(e).split(': ', 1)[-1]}") from None
