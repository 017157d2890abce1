"""Each queue's share of the cluster as the scheduler sees it now: deserved, allocated, requested.

What people see beside a queue's spec (the dashboard's overview, `GET /api/v1/overview`).
Deserved is what the configured queue plugin would use this cycle: the proportion plugin's
water-fill (Volcano's default), or with the capacity plugin (and no proportion) the queue's
`spec.deserved`, else its guarantee, within its real capability. Allocated is what its
running pods hold, requested what all its unfinished pods ask for (the scheduler's totals).
Pure: it reads the state and changes nothing, so it may run between cycles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from caldera.scheduler.config import SchedulerConfig
from caldera.scheduler.plugins.proportion import Deserved, real_capabilities
from caldera.scheduler.state import ClusterState, Vector


@dataclass(frozen=True, slots=True)
class QueueShare:
    """Amounts in the scheduler's units (`caldera.core.resources`), by resource name; zeros left out."""

    deserved: dict[str, float]
    allocated: dict[str, float]
    requested: dict[str, float]


def queue_shares(state: ClusterState, config: SchedulerConfig) -> dict[str, QueueShare]:
    caps = real_capabilities(state)
    names = config.plugin_names()
    by_capacity = "capacity" in names and "proportion" not in names
    proportion = None if by_capacity else Deserved(state, caps)
    out = {}
    for q in state.queues.values():
        if proportion is not None:
            deserved = proportion[q.name]
        else:
            deserved = np.minimum(q.deserved_spec if q.has_deserved else q.guarantee, caps[q.name])
        out[q.name] = QueueShare(_named(state, deserved), _named(state, q.allocated), _named(state, q.request))
    return out


def _named(state: ClusterState, vector: Vector) -> dict[str, float]:
    return {name: v for name, v in state.as_dict(vector).items() if v > 0}
