"""Labels and taints people put on the embedded cluster's nodes: at `caldera up`, by `caldera node`, kept across restarts.

What was set is kept apart from the nodes' shape, as {"labels": {node: {key: value}},
"taints": {node: [taint]}} (the `overrides`): the daemon stores it with its node
configuration and lays it over the planned nodes at every start, so a label set by
`caldera node label` survives `caldera down` / `caldera up`. Labels the embedded
cluster sets itself (`kubernetes.io/hostname`, `caldera.dev/...`) cannot be changed.
Invariant: a node's labels are its planned labels plus its overrides; its taints are
exactly its override taints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from caldera.core import objects as o
from caldera.core.errors import FieldError, ValidationError
from caldera.core.nodelabels import EFFECTS, node_labels_flag, node_taints_flag, reserved

Overrides = dict[str, Any]  # {"labels": {node: {k: v}}, "taints": {node: [{"key", "value", "effect"}]}}


def empty() -> Overrides:
    return {"labels": {}, "taints": {}}


def with_flags(
    overrides: Overrides, nodes: Sequence[o.Node], labels: Sequence[str], taints: Sequence[str]
) -> Overrides:
    """`overrides` with `caldera up`'s --node-labels and --node-taints added (for every node, or the one named)."""
    out: Overrides = {"labels": dict(overrides.get("labels") or {}), "taints": dict(overrides.get("taints") or {})}
    names = [n.name for n in nodes]
    errors: list[FieldError] = []
    for flag, text in [("--node-labels", t) for t in labels] + [("--node-taints", t) for t in taints]:
        try:
            node, parsed = node_labels_flag(text) if flag == "--node-labels" else node_taints_flag(text)
        except ValueError as e:
            errors.append(FieldError(flag, str(e)))
            continue
        if node is not None and node not in names:
            errors.append(FieldError(flag, f"{text!r}: there is no node {node!r} (nodes: {', '.join(names)})"))
            continue
        for name in [node] if node else names:
            if isinstance(parsed, dict):
                bad = [k for k in parsed if reserved(k)]
                if bad:
                    errors.append(FieldError(flag, f"{text!r}: {bad[0]} is the cluster's own label"))
                out["labels"][name] = {**out["labels"].get(name, {}), **parsed}
            else:
                kept = [t for t in out["taints"].get(name, []) if (t["key"], t["effect"]) not in _ids(parsed)]
                out["taints"][name] = kept + [t.to_dict() for t in parsed]
    if errors:
        raise ValidationError(errors, "caldera up")
    return out


def apply(nodes: Sequence[o.Node], overrides: Overrides) -> list[o.Node]:
    """The planned `nodes` with the labels and taints of `overrides` (nodes no longer planned are ignored)."""
    return [
        _with(n, (overrides.get("labels") or {}).get(n.name, {}), (overrides.get("taints") or {}).get(n.name, []))
        for n in nodes
    ]


def patch(
    node: o.Node, overrides: Overrides, labels: Mapping[str, str | None] | None, taints: list[Any] | None
) -> Overrides:
    """`overrides` changed for one node as `caldera node` asks: labels merged (None removes one), taints replaced."""
    errors: list[FieldError] = []
    mine = dict((overrides.get("labels") or {}).get(node.name, {}))
    for key, value in (labels or {}).items():
        if reserved(key):
            errors.append(FieldError(f"metadata.labels.{key}", "is the cluster's own label: it cannot be changed"))
        elif value is None:
            if key not in mine:
                errors.append(FieldError(f"metadata.labels.{key}", f"node {node.name} has no label {key} of yours"))
            mine.pop(key, None)
        else:
            mine[key] = value
    new_taints = (overrides.get("taints") or {}).get(node.name, [])
    if taints is not None:
        new_taints = []
        for i, t in enumerate(taints):
            if not isinstance(t, Mapping) or not t.get("key") or t.get("effect") not in EFFECTS:
                errors.append(
                    FieldError(f"spec.taints[{i}]", f"a taint needs a key and an effect ({', '.join(EFFECTS)})")
                )
                continue
            new_taints.append({"key": str(t["key"]), "value": str(t.get("value") or ""), "effect": str(t["effect"])})
    if errors:
        raise ValidationError(errors, f"node {node.name}")
    return {
        "labels": {**(overrides.get("labels") or {}), node.name: mine},
        "taints": {**(overrides.get("taints") or {}), node.name: new_taints},
    }


def _with(node: o.Node, labels: Mapping[str, str], taints: Sequence[Mapping[str, str]]) -> o.Node:
    meta = dataclasses.replace(node.metadata, labels={**node.metadata.labels, **labels})
    planted = tuple(o.Taint(key=t["key"], value=t.get("value", ""), effect=t["effect"]) for t in taints)
    return dataclasses.replace(node, metadata=meta, taints=planted)


def _ids(taints: Sequence[o.Taint]) -> set[tuple[str, str]]:
    return {(t.key, t.effect) for t in taints}
