"""A scheduling cycle's decisions carried out on the control plane: PodGroup phases, evictions, binds.

Each decision is checked against the objects as they are now (the cycle ran on a snapshot):
a pod gone, already bound or being deleted is not bound; a PodGroup gone takes no phase.
A bound pod is Running from here on and its process is asked of the executor at once, so
a pod is bound at most once per incarnation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from caldera.controller import requests_for_podgroup_change
from caldera.core import objects as o
from caldera.scheduler.session import CycleResult

if TYPE_CHECKING:
    from caldera.system.control import ControlPlane

EVICTION_KINDS = {"Preempt": "Preempt", "Reclaim": "Reclaim"}  # scheduler reasons with an event kind of their own


def apply_cycle(plane: ControlPlane, result: CycleResult) -> None:
    for update in result.podgroups:
        job_key = f"{update.key.split('/', 1)[0]}/{update.job}"
        pg = plane.podgroups.get(job_key)
        if pg is None:
            continue
        old = pg.phase
        pg.phase = update.phase
        pg.conditions = list(update.conditions)
        plane._touch(job_key)
        if old != update.phase:
            plane.record("PodGroupPhase", pg.metadata.name, reason=update.phase, namespace=pg.metadata.namespace)
            if old == o.PG_COMPLETED and update.key in plane.state.waiting:
                plane._dirty = True  # a pod created after the others ended: allocate places it in the next cycle
        cond = update.conditions[-1] if update.conditions else None
        if cond is not None and cond.type == "Unschedulable" and cond.last_transition_time == plane.clock.now():
            plane.record(
                "Unschedulable", update.job, reason=cond.reason, message=cond.message, namespace=pg.metadata.namespace
            )
        for req in requests_for_podgroup_change(old, update.phase):
            plane._request(job_key, req)
    for ev in result.evictions:
        if ev.pod in plane.pods:
            plane.evict(ev.pod, ev.reason, ev.message, kind=EVICTION_KINDS.get(ev.reason, "Evict"))
    # A gang's pods are bound one after the other: the restarts of its live pods, which each pod's request
    # is checked against, are counted once for the run of binds of one job (binding keeps a pod live).
    now = plane.clock.now()
    run_of, restarts = "", None
    for bind in result.binds:
        pod = plane.pods.get(bind.pod)
        if pod is None or pod.node_name or pod.deletion_timestamp is not None:
            continue
        job_key = pod.job_key
        if job_key != run_of:
            run_of, restarts = job_key, None
        pod.node_name = bind.node
        plane._touch(job_key)
        plane.record("Bind", pod.name, bind.node, namespace=pod.metadata.namespace)
        plane.history.begin(pod, bind.node, now)
        old = pod.status.phase
        pod.status.phase = o.POD_RUNNING
        pod.status.start_time = now
        plane.executor.start(pod, plane.nodes[bind.node])
        restarts = plane._pod_started(pod, old, restarts)
