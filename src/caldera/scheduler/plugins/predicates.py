"""predicates: nodeSelector, required node affinity, and taints against tolerations.

Resource fit and the pod-count limit are checked by the session for every
action (a node is never overcommitted, whatever the configuration); this plugin
adds the label and taint filters. Its masks depend only on the pod spec and the
nodes' labels and taints, so the session caches them until a node changes.
"""

from __future__ import annotations

import numpy as np

from caldera.core import objects as o
from caldera.scheduler.framework import Plugin, Rejection
from caldera.scheduler.state import TaskInfo

SELECTOR = "node(s) didn't match Pod's node affinity/selector"


class Predicates(Plugin):
    name = "predicates"

    def predicate(self, task: TaskInfo) -> list[Rejection]:
        state, spec = self.ssn.state, task.spec
        # In kube-scheduler's filter order (TaintToleration before NodeAffinity): fit errors name a node's first failure.
        out: list[Rejection] = []
        tainted = [i for i, taints in enumerate(state.node_taints) if taints]
        if tainted:
            by_reason: dict[str, list[int]] = {}
            for i in tainted:
                bad = untolerated(state.node_taints[i], spec.tolerations)
                if bad is not None:
                    reason = f"node(s) had untolerated taint {{{bad.key}: {bad.value}}}"
                    by_reason.setdefault(reason, []).append(i)
            for reason, rows in by_reason.items():
                ok = np.ones(len(state.node_names), dtype=bool)
                ok[rows] = False
                out.append(Rejection(ok, reason))
        if spec.node_selector or spec.node_affinity:
            ok = np.fromiter((selects(spec, labels) for labels in state.node_labels), bool, len(state.node_labels))
            out.append(Rejection(ok, SELECTOR))
        return out


def selects(spec: o.PodSpec, labels: dict[str, str] | object) -> bool:
    """Whether a node with `labels` satisfies the pod's nodeSelector and required node affinity."""
    assert isinstance(labels, dict)
    if any(labels.get(k) != v for k, v in spec.node_selector.items()):
        return False
    return not spec.node_affinity or any(term.matches(labels) for term in spec.node_affinity)


def untolerated(taints: tuple[o.Taint, ...], tolerations: tuple[o.Toleration, ...]) -> o.Taint | None:
    """The first taint that keeps the pod off a node (NoSchedule or NoExecute, not tolerated); None if none."""
    for taint in taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None
