"""Pods of other operators on Kubernetes: what the PodGroup and pod watches tell the plane about them.

A pod naming caldera's `schedulerName` that no Volcano Job owns (a Kubeflow PyTorchJob's, a Deployment's, a
bare pod) is scheduled with its PodGroup, as Volcano's scheduler does (`backends.kube.foreign` says which
group and how each is read):

- a PodGroup another operator made goes to the plane (`ControlPlane.put_group`), its spec changes too; a
  deleted one leaves it (its waiting pods wait again);
- a pod naming a group not seen yet waits for it (holding its node meanwhile if it is bound: a restart, or a
  group deleted under running pods); a pod naming none gets a group of its own, made as
  Volcano's PodGroup controller makes it (written by the status writer, owned by the pod's controller or
  the pod);
- a pod enters the plane once (`put_pod`), and `KubePods` knows it as written (so the scheduler's placement
  is one `pods/binding`, its preemption a delete, and its end or deletion comes back through `pod_event`);
- the group's phase and conditions are written to the PodGroup's status by the status writer, as for a Job's.

Invariant: called on the controller's loop thread only; caldera never creates, restarts or deletes such a
pod but for preemption, reclaim and a lost node.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from caldera.backends.kube.client import JSON
from caldera.backends.kube.foreign import (
    JOB_PREFIX,
    group_name,
    implicit_podgroup,
    names_group,
    owned_by_volcano_job,
    pod_from_api,
    podgroup_from_api,
)
from caldera.backends.kube.informer import object_key
from caldera.core.errors import CalderaError
from caldera.core.objects import Pod
from caldera.system.control import ControlPlane
from caldera.system.kubepods import KubePods
from caldera.system.kubestatus import StatusWriter

log = logging.getLogger("caldera.kube")


class OperatorGroups:
    def __init__(
        self,
        plane: ControlPlane,
        pods: KubePods,
        status: StatusWriter,
        scheduler_name: str,
        hold: Callable[[str, JSON], None],
    ) -> None:
        self.plane = plane
        self.pods = pods
        self.status = status
        self.scheduler_name = scheduler_name
        # (change, pod): a bound pod the plane does not hold (its group not there) holds its node all the same
        self.hold = hold
        self.groups: dict[str, tuple[str, JSON]] = {}  # podgroup key → (uid, spec) of a group in the plane
        self.waiting: dict[str, dict[str, JSON]] = {}  # podgroup key → pod key → pods naming it, before it is seen
        self.refused: set[str] = set()  # uids of pods and PodGroups that could not be read (reported once)

    def on_podgroups(self, change: str, obj: JSON) -> None:
        if owned_by_volcano_job(obj):
            return  # a Job's, caldera's own
        key = object_key(obj)
        ns, name = key.split("/", 1)
        job_key = _job_key(key)
        uid, spec = str(obj["metadata"].get("uid", "")), obj.get("spec") or {}
        if change == "DELETED":
            if self.groups.get(key, ("",))[0] == uid:
                del self.groups[key]
                self.plane.drop_group(job_key)
            return
        known = self.groups.get(key)
        if known == (uid, spec):
            return  # its status changed (the scheduler's own writes coming back)
        try:
            pg = podgroup_from_api(obj)
        except CalderaError as e:
            self._refuse(uid, "RefusedGroup", JOB_PREFIX + name, ns, e)
            return
        if known is None or known[0] != uid:
            self.status.adopt_podgroup(obj)
            if key not in self.status.group_owners:
                self.status.not_ours.add(key)
        self.groups[key] = (uid, spec)
        self.plane.put_group(job_key, pg)
        for pod in self.waiting.pop(key, {}).values():
            self._add(pod)

    def on_pod(self, change: str, obj: JSON) -> None:
        """Every pod event (after `KubePods.pod_event`, which follows the pods already in the plane)."""
        spec = obj.get("spec") or {}
        if spec.get("schedulerName") != self.scheduler_name or owned_by_volcano_job(obj):
            return
        key = object_key(obj)
        group = f"{key.split('/', 1)[0]}/{group_name(obj)}"
        if change == "DELETED":
            self._unwait(group, key)
            self.hold("DELETED", obj)  # whatever held its node for it (waiting for its group, or refused)
            self._forget_unwritten(group)
            return
        known = self.pods.api.get(key)
        if known is not None and known.uid == obj["metadata"].get("uid"):
            return  # in the plane: `KubePods.pod_event` follows it
        if obj["metadata"].get("deletionTimestamp"):
            # Being deleted before the plane held it (a restart, a namespace going): not scheduled, as kube-scheduler
            # skips it, and no group is made for it; if bound, it holds its node until it is gone. (Nor is it
            # scheduled when its group comes: the copy that waited for it is dropped.)
            self._unwait(group, key)
            self.hold(change, obj)
            return
        if group not in self.groups:
            if names_group(obj):
                # Its PodGroup is not there yet (or went): it waits for it, holding its node if it is bound.
                self.waiting.setdefault(group, {})[key] = obj
                self.hold(change, obj)
                return
            pod = self._read(obj)
            if pod is not None:  # read first: a pod refused gets no group
                self._make_group(obj, group)
                self._put(obj, pod)
            else:
                self.hold(change, obj)  # refused, it still holds its node if it is bound
            return
        self._add(obj)

    def _unwait(self, group: str, key: str) -> None:
        waiting = self.waiting.get(group)
        if waiting is not None and waiting.pop(key, None) is not None and not waiting:
            del self.waiting[group]

    def _forget_unwritten(self, group: str) -> None:
        """A group caldera made for a pod (Volcano's) but could not write yet, once no pod of it is left: dropped,
        and no longer tried (a written one goes with its owner, and its DELETED comes through the watch)."""
        job_key = _job_key(group)
        known = self.groups.get(group)
        if known is None or known[0] or self.plane.job_pods.get(job_key):
            return  # not caldera's to drop, written (its uid seen), or a pod of it is left
        del self.groups[group]
        self.status.group_owners.pop(group, None)
        self.plane.drop_group(job_key)

    def _make_group(self, pod: JSON, group: str) -> None:
        """The group of a pod that names none (Volcano's `podgroup-<uid>`, of its controller or itself), into the
        plane; the status writer makes it."""
        pg, owners = implicit_podgroup(pod)
        self.status.group_owners[group] = owners
        self.groups[group] = ("", {})  # its uid comes with the watch's ADDED, once it is written
        self.plane.put_group(_job_key(group), pg)

    def _add(self, obj: JSON) -> None:
        pod = self._read(obj)
        if pod is not None:
            self._put(obj, pod)
        else:
            self.hold("MODIFIED", obj)  # refused, it still holds its node if it is bound (until its DELETED)

    def _read(self, obj: JSON) -> Pod | None:
        try:
            return pod_from_api(obj, self.plane.state.priority_of)
        except CalderaError as e:
            meta = obj["metadata"]
            self._refuse(str(meta.get("uid", "")), "Refused", str(meta.get("name", "")), meta.get("namespace"), e)
            return None

    def _put(self, obj: JSON, pod: Pod) -> None:
        self.hold("DELETED", obj)  # if it held its node waiting for its group, the plane holds it now
        self.pods.adopt(obj)
        self.plane.put_pod(pod)

    def _refuse(self, uid: str, kind: str, name: str, namespace: object, error: CalderaError) -> None:
        """Said once per object: in the log, and as a Warning event on it (FailedScheduling, the field and rule)."""
        if uid in self.refused:
            return
        self.refused.add(uid)
        ns = str(namespace or "default")
        log.warning("%s %s/%s is not scheduled: %s", "pod" if kind == "Refused" else "podgroup", ns, name, error)
        self.plane.record(kind, name, reason="Refused", message=f"not scheduled: {error}", namespace=ns)


def _job_key(group: str) -> str:
    """The plane's job key of the PodGroup `namespace/name`: a key no Job has (`JOB_PREFIX`)."""
    ns, name = group.split("/", 1)
    return f"{ns}/{JOB_PREFIX}{name}"
