"""Scheduler configurations the scenarios compare (Volcano's conf format, as `--scheduler-config` reads it)."""

from __future__ import annotations

from typing import Any

from caldera.testing.scenario import scheduler_config

FIRST_TIER: list[str | dict[str, Any]] = ["priority", "gang", "conformance"]
SECOND_TIER: list[str | dict[str, Any]] = ["drf", "predicates", "proportion", "nodeorder", "binpack"]

# The built-in configuration before caldera-default (scheduler/config.py VOLCANO_SHAPE_CONFIG): Volcano's
# plugins with preempt and reclaim. The scenarios that pin Volcano's semantics (enqueue admission, drf,
# reclaim between queues, priority preemption) run on it; caldera-default's las and max-loss decide
# differently by design (a job that cannot checkpoint is never its victim).
VOLCANO_SHAPE = scheduler_config(
    actions="enqueue, allocate, preempt, reclaim, backfill", tiers=[FIRST_TIER, SECOND_TIER]
)

# The same tiers without the enqueue action: allocate admits Pending podgroups itself, so a gang that
# cannot be placed is Inqueue with its pods and says why in its Unschedulable condition.
NO_ENQUEUE = scheduler_config(actions="allocate, preempt, reclaim, backfill", tiers=[FIRST_TIER, SECOND_TIER])


def with_sla(waiting_time: str) -> dict[str, Any]:
    """VOLCANO_SHAPE plus `sla` in the first tier, so its enqueue permit is heard before proportion's reject."""
    sla = {"name": "sla", "arguments": {"sla-waiting-time": waiting_time}}
    return scheduler_config(
        actions="enqueue, allocate, preempt, reclaim, backfill", tiers=[[*FIRST_TIER, sla], SECOND_TIER]
    )


def placement_only(*plugins: str | dict[str, Any]) -> dict[str, Any]:
    """Gang scheduling plus predicates and the given scoring plugins, nothing else."""
    return scheduler_config(
        actions="enqueue, allocate, backfill", tiers=[["priority", "gang"], ["predicates", *plugins]]
    )
