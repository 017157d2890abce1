"""fifo: pods in the order they arrived, as the default Kubernetes scheduler takes them from its queue.

A job goes by its next pod: the job created first goes first and, among jobs
created at the same instant, the one with fewer pods placed. Pods that
concurrent controllers create together reach kube-scheduler's queue
interleaved, which the simulator's single instant cannot show; taking them in
rank order across jobs (index 0 of each job, then index 1, ...) is that
interleaving made deterministic. With no gang plugin, allocate places one pod
per turn, so this is kube-scheduler's order (priority, then arrival) when
`priority` comes before it.

`fifo.requeue: true` (the `kube-default` policy) is kube-scheduler's handling
of a pod that does not fit: it is set aside in the unschedulable queue stamped
with the time it failed, and when the cluster changes it goes back into the
active queue, where PrioritySort compares those stamps: behind the pods that
arrived before it failed. So a job whose pod could not be placed goes, from
then on, by the time of its last failure (and, within one cycle, the order it
failed in) instead of its creation. With pods of one shape (Philly's one-GPU
pods) a pod that fits nowhere means no later pod fits, and the order stays
nearly first come, first served; with shapes that differ, later small pods are
placed around a big one set aside, and two partial gangs can each hold what
the other needs. The stamps are kept on the cluster state from cycle to cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from caldera.scheduler.framework import Plugin
from caldera.scheduler.session import Session
from caldera.scheduler.state import READY, JobInfo

_REQUEUED = "fifo.requeued"


class FIFO(Plugin):
    name = "fifo"

    def __init__(self, ssn: Session, args: Mapping[str, object]) -> None:
        super().__init__(ssn, args)
        self.requeue = self.settings(lambda p: p.arg_bool("fifo.requeue", False))
        self._requeued: dict[str, tuple[float, int]] = {}
        if self.requeue:
            found = ssn.state.derived.get(_REQUEUED)
            if found is None or not isinstance(found[1], dict):
                found = ssn.state.derived[_REQUEUED] = ((), {})
            self._requeued = cast(dict[str, tuple[float, int]], found[1])

    def job_order(self, job: JobInfo) -> tuple[object, ...]:
        return (*self._requeued.get(job.key, (job.creation, -1)), job.count(READY))

    def on_session_close(self) -> None:
        if not self.requeue:
            return
        now = self.ssn.now
        for i, key in enumerate(self.ssn.unschedulable):  # in the order they failed this cycle
            self._requeued[key] = (now, i)
        for key in [k for k in self._requeued if k not in self.ssn.state.jobs]:
            del self._requeued[key]  # the job is gone
