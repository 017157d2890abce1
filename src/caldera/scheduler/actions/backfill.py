"""backfill: place BestEffort tasks (no resource requests) of admitted jobs on any node that takes them."""

from __future__ import annotations

from caldera.scheduler.actions.allocate import ACTIVE
from caldera.scheduler.framework import JOB_READY
from caldera.scheduler.session import Session
from caldera.scheduler.state import TaskStatus
from caldera.scheduler.statement import Statement


def backfill(ssn: Session) -> None:
    if not ssn.state.waiting:
        return
    for job in [ssn.state.jobs[k] for k in sorted(ssn.state.waiting)]:
        if job.pg_phase not in ACTIVE or not job.counts.get(TaskStatus.PENDING):
            continue
        waiting = [t for t in job.tasks.values() if t.status is TaskStatus.PENDING and t.best_effort]
        if not waiting:
            continue
        stmt = Statement(ssn)
        for task in ssn.ordered_tasks(waiting):
            node = ssn.best_fit(task, future=False)
            if node >= 0:
                stmt.allocate(task, node)
        ssn.touched.add(job.key)
        if ssn.call(JOB_READY, job):
            stmt.commit()
        else:
            stmt.discard()
