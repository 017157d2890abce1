"""fifo: pods in the order they arrived, as the default Kubernetes scheduler takes them from its queue.

A job goes by its next pod: the job created first goes first and, among jobs
created at the same instant, the one with fewer pods placed. Pods that
concurrent controllers create together reach kube-scheduler's queue
interleaved, which the simulator's single instant cannot show; taking them in
rank order across jobs (index 0 of each job, then index 1, ...) is that
interleaving made deterministic. With no gang plugin, allocate places one pod
per turn, so this is kube-scheduler's order (priority, then arrival) when
`priority` comes before it.
"""

from __future__ import annotations

from caldera.scheduler.framework import Plugin
from caldera.scheduler.state import READY, JobInfo


class FIFO(Plugin):
    name = "fifo"

    def job_order(self, job: JobInfo) -> tuple[object, ...]:
        return (job.creation, job.count(READY))
