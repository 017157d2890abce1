"""PodGroups and pods the control plane schedules but does not own: those of other operators (on Kubernetes).

A pod made by another operator (Kubeflow's training operator, a Deployment, a bare pod) that names the
scheduler is placed with its PodGroup as a gang, exactly as a Volcano Job's pods are: same state, same
actions, same preemption. What the plane does not do is the job controller's part: no such pod is created,
restarted or deleted by the plane, but for the scheduler's evictions (preempt, reclaim) and a lost node;
its operator does the rest. In the plane such a group sits under a job key that no Job has
(`caldera.system.kubegroups` names it), so the controller's steps never look at it: its requests find no
job, and its pods going only leave their group.

Invariant: a group's pods are in the scheduler's state exactly while the group is; a group dropped while
some of its pods hold a node leaves the scheduler only once they are gone (`_drop_podgroup`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from caldera.core import objects as o
from caldera.scheduler.state import ClusterState

if TYPE_CHECKING:
    from caldera.system.history import Attempts


class ForeignGroups:
    """The plane's inputs for other operators' groups (mixed into `ControlPlane`, whose state it shares)."""

    state: ClusterState
    podgroups: dict[str, o.PodGroup]  # by job key
    pods: dict[str, o.Pod]
    job_pods: dict[str, dict[str, o.Pod]]
    history: Attempts
    _dirty: bool

    if TYPE_CHECKING:  # the reconciler's, which these steps share

        def _touch(self, job_key: str) -> None: ...

        def _drop_podgroup(self, job_key: str, pg: o.PodGroup) -> None: ...

        def _forget_deleted(self, job_key: str) -> None: ...

    def put_group(self, job_key: str, pg: o.PodGroup) -> None:
        """Another operator's PodGroup, new or with a changed spec, under `job_key`; its phase stays the scheduler's."""
        old = self.podgroups.get(job_key)
        if old is not None:
            pg.phase, pg.conditions = old.phase, old.conditions
            pg.running, pg.succeeded, pg.failed = old.running, old.succeeded, old.failed
        self.podgroups[job_key] = pg
        self.state.set_podgroup(pg)
        pods = self.job_pods.setdefault(job_key, {})
        for pod in pods.values():  # pods that came before their group (or stayed after it went) join it
            if pod.key not in self.state.tasks:
                self.state.set_pod(pod, pg.key)
        self._touch(job_key)
        self._dirty = True

    def drop_group(self, job_key: str) -> None:
        """The operator's PodGroup was deleted: its pods that wait are no longer scheduled (they wait for it)."""
        pg = self.podgroups.pop(job_key, None)
        if pg is None:
            return
        for pod in self.job_pods.get(job_key, {}).values():
            if not pod.node_name:
                self.state.remove_task(pod.key)
        self._drop_podgroup(job_key, pg)
        self._touch(job_key)
        self._dirty = True
        self._forget_deleted(job_key)  # nothing kept under its key once its last pod is gone too (a long life)

    def put_pod(self, pod: o.Pod) -> None:
        """An existing pod of another operator's group (`pod.job` names the group's job key), bound or not."""
        self.pods[pod.key] = pod
        self.job_pods.setdefault(pod.job_key, {})[pod.name] = pod
        pg = self.podgroups.get(pod.job_key)
        if pg is not None:
            self.state.set_pod(pod, pg.key)
        if pod.node_name and not pod.finished:
            self.history.begin(pod, pod.node_name, pod.status.start_time or pod.metadata.creation_timestamp)
        self._touch(pod.job_key)
        self._dirty = True
