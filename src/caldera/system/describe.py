"""What `caldera describe JOB` shows: the job, its PodGroup, its summary and every event about them.

Events come from the store (those of earlier daemons too) and then from the plane's events this
turn has not written yet, so nothing is shown twice or missed. The store's version is read
first: a watch from it misses no change made after the answer.
"""

from __future__ import annotations

from dataclasses import replace

from caldera import controller
from caldera.backends.sqlite_store import SqliteStore
from caldera.core import objects as o
from caldera.core.elastic import max_replicas
from caldera.system import persist
from caldera.system.api import JSON
from caldera.system.control import ControlPlane

EVENT_FIELDS = ("time", "kind", "object", "node", "reason", "message")  # an event as describe shows it


def describe(store: SqliteStore, plane: ControlPlane, events_saved: int, job: o.Job, summary: JSON) -> JSON:
    """`events_saved`: how many of the plane's events the store has already."""
    version = store.latest()
    pg = plane.podgroups.get(job.key)
    # Every pod the job may have had, not only those it has now: a preempted pod is gone, its events stay.
    pods = (controller.pod_name(job.name, t.name, i) for t in job.spec.tasks for i in range(max_replicas(job, t)))
    objects = {job.name, controller.podgroup_name(job), *pods}
    saved = [{k: e[k] for k in EVENT_FIELDS} for e in store.events(job.namespace, tuple(sorted(objects)))]
    fresh = plane.events[events_saved:]
    return {
        "resourceVersion": version,
        "job": persist.job_record(job),
        "summary": summary,
        # Its pod counts as Volcano's scheduler writes them, on a copy (the plane's and the store's group stay as they are).
        "podgroup": controller.count_podgroup(replace(pg), plane.job_pods.get(job.key, {}).values()).to_dict()
        if pg
        else None,
        "events": saved + [e.to_dict() for e in fresh if e.namespace == job.namespace and e.object in objects],
    }
