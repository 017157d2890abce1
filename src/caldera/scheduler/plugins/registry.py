"""The plugin registry: one explicit dict from name to class."""

from __future__ import annotations

from caldera.scheduler.framework import Plugin
from caldera.scheduler.plugins.binpack import Binpack
from caldera.scheduler.plugins.capacity import Capacity
from caldera.scheduler.plugins.conformance import Conformance
from caldera.scheduler.plugins.consolidate import Consolidate
from caldera.scheduler.plugins.drf import DRF
from caldera.scheduler.plugins.fifo import FIFO
from caldera.scheduler.plugins.gang import Gang
from caldera.scheduler.plugins.las import LAS
from caldera.scheduler.plugins.nodeorder import NodeOrder
from caldera.scheduler.plugins.overcommit import Overcommit
from caldera.scheduler.plugins.predicates import Predicates
from caldera.scheduler.plugins.priority import Priority
from caldera.scheduler.plugins.proportion import Proportion
from caldera.scheduler.plugins.reservation import Reservation
from caldera.scheduler.plugins.sla import SLA
from caldera.scheduler.plugins.srtf import SRTF
from caldera.scheduler.plugins.task_topology import TaskTopology


def registry() -> dict[str, type[Plugin]]:
    classes: list[type[Plugin]] = [
        Priority,
        Gang,
        Conformance,
        DRF,
        Proportion,
        Capacity,
        Overcommit,
        Predicates,
        NodeOrder,
        Binpack,
        TaskTopology,
        SLA,
        FIFO,
        LAS,
        SRTF,
        Consolidate,
        Reservation,
    ]
    return {c.name: c for c in classes}
