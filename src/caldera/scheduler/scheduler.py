"""One scheduling cycle: open a session over the state, run the configured actions in order, close it."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from caldera.scheduler.actions.allocate import allocate
from caldera.scheduler.actions.backfill import backfill
from caldera.scheduler.actions.enqueue import enqueue
from caldera.scheduler.actions.preempt import preempt
from caldera.scheduler.actions.reclaim import reclaim
from caldera.scheduler.config import SchedulerConfig, default_config
from caldera.scheduler.framework import Plugin
from caldera.scheduler.plugins.registry import registry
from caldera.scheduler.session import CycleResult, Session, hook_layout
from caldera.scheduler.state import ClusterState

ACTIONS: dict[str, Callable[[Session], None]] = {
    "enqueue": enqueue,
    "allocate": allocate,
    "preempt": preempt,
    "reclaim": reclaim,
    "backfill": backfill,
}


class Scheduler:
    def __init__(
        self, config: SchedulerConfig | None = None, plugins: Mapping[str, type[Plugin]] | None = None
    ) -> None:
        self.config = config or default_config()
        self.plugins = dict(plugins) if plugins is not None else registry()
        self.layout = hook_layout(self.config, self.plugins)

    def run_cycle(self, state: ClusterState, now: float) -> CycleResult:
        ssn = Session(state, self.config, now, self.plugins, self.layout)
        for name in self.config.actions:
            ACTIONS[name](ssn)
        result = ssn.close()
        ssn.release()
        return result
