"""Why a job waits, for people: the reason `list`, `get` and `describe` show, and what `explain` prints.

A job's summary carries `"waiting"`: null when nothing holds it up, else
{"reason", "message", "never"} with reason one of
- `NeverFits`: as the nodes and its queue are, it can never run (`never` true): a task no node
  takes, a gang larger than the cluster, a queue capability below its minimum;
- `Unschedulable`: not now: capacity in use, its queue's capability in use, a Closed queue
  (the scheduler's own words from the PodGroup's condition, then what `explain` finds);
- `CrashLoopBackOff`: one of its pods failed again and waits out its restart back-off.
`explanation_json` is `caldera explain JOB` and `GET .../jobs/{name}/explain`: the same
verdict, per node class and for the queue.
"""

from __future__ import annotations

from caldera.core import objects as o
from caldera.core.resources import format_resource_list
from caldera.scheduler.explain import Explanation, explain
from caldera.system.api import JSON
from caldera.system.control import CRASH_LOOP, ControlPlane

NEVER_FITS = "NeverFits"
UNSCHEDULABLE = "Unschedulable"
WAITING_PHASES = (o.PENDING, o.RESTARTING)


def waiting(plane: ControlPlane, job: o.Job) -> JSON | None:
    """Why the job is held up now; None if nothing holds it up."""
    for pod in sorted(plane.job_pods.get(job.key, {}).values(), key=lambda p: p.name):
        if pod.status.reason == CRASH_LOOP:
            return {"reason": CRASH_LOOP, "message": f"pod {pod.name}: {pod.status.message}", "never": False}
    pg = plane.podgroups.get(job.key)
    if pg is None or not _held(job, pg):
        return None
    found = explain(plane.state, job, pg)
    if found.never:
        return {"reason": NEVER_FITS, "message": "; ".join(found.never), "never": True}
    condition = next((c for c in pg.conditions if c.type == "Unschedulable" and c.status == "True"), None)
    said = condition.message if condition is not None else ""
    seen = "; ".join(found.now)
    if not said and not seen:
        return None  # not tried yet, or on its way
    message = f"{said} ({seen})" if said and seen else said or seen
    return {"reason": UNSCHEDULABLE, "message": message, "never": False}


def explanation_json(plane: ControlPlane, job: o.Job) -> JSON:
    """`caldera explain JOB`: the job's phase, its waiting reason, and what blocks it per node class and in its queue."""
    pg = plane.podgroups.get(job.key)
    out: JSON = {
        "job": job.name,
        "namespace": job.namespace,
        "phase": job.status.phase,
        "podGroup": pg.phase if pg is not None else None,
        "waiting": waiting(plane, job),
        "conditions": [c.to_dict() for c in pg.conditions] if pg is not None else [],
    }
    if pg is None:
        out.update({"never": [], "now": [], "queue": None, "nodeClasses": []})
        return out
    found = explain(plane.state, job, pg)
    out.update(_explanation(found))
    if not _held(job, pg):
        out["now"] = []  # its own pods hold what it needs: nothing stands in its way
    return out


def _held(job: o.Job, pg: o.PodGroup) -> bool:
    """Whether the job is waiting for its gang to be placed."""
    return job.status.phase in WAITING_PHASES and pg.phase in (o.PG_PENDING, o.PG_INQUEUE)


def _explanation(e: Explanation) -> JSON:
    q = e.queue
    return {
        "never": list(e.never),
        "now": list(e.now),
        "queue": {
            "name": q.name,
            "state": q.state,
            "capability": format_resource_list(q.capability),
            "allocated": format_resource_list(q.allocated),
            "minimum": format_resource_list(q.minimum),
            "never": q.never,
            "now": q.now,
        },
        "nodeClasses": [
            {
                "nodes": list(c.nodes),
                "allocatable": format_resource_list(c.allocatable),
                "labels": dict(c.labels),
                "taints": [t.to_dict() for t in c.taints],
                "schedulable": c.schedulable,
                "tasks": [
                    {"task": f.task, "need": f.need, "perNode": f.per_node, "fitsNow": f.now, "blocks": f.blocks}
                    for f in c.tasks
                ],
            }
            for c in e.classes
        ],
    }
