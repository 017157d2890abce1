"""enqueue: admit Pending podgroups (→ Inqueue) while their queue and the cluster can hold them.

Queues are visited in order and jobs within a queue in job order; a job is
admitted when the `job_enqueueable` vote allows it. Beyond Volcano: a job none
of whose pods could fit any node even when empty is not admitted (and says so),
and an Inqueue job that has not started within `inqueue-timeout` seconds goes
back to Pending, releasing the share it was holding for others. The queue
plugins count what lower-priority jobs of the same queue hold as room
(`proportion.Yielding`), so a full queue does not keep out the job that
preempt would make room for.
"""

from __future__ import annotations

from caldera.core import objects as o
from caldera.core.resources import from_units
from caldera.scheduler.framework import JOB_ENQUEUEABLE, JOB_ENQUEUED
from caldera.scheduler.session import Session
from caldera.scheduler.state import READY, ClusterState, JobInfo, Vector


def enqueue(ssn: Session) -> None:
    state = ssn.state
    timeout = ssn.config.action_arg("enqueue", "inqueue-timeout", 0.0)
    if timeout > 0:
        _release_stale(ssn, timeout)
    pending = [state.jobs[k] for k in state.pending_groups if state.jobs[k].failed_at != state.version]
    if not pending:
        return
    queue_keys = {q: ssn.queue_key(state.queue(q)) for q in {j.queue for j in pending}}
    for job in sorted(pending, key=lambda j: (queue_keys[j.queue], ssn.job_key(j))):
        never = _never_fits(ssn, job)
        if never:
            ssn.not_enqueued[job.key] = never
            job.failed_at = state.version
            continue
        if ssn.call(JOB_ENQUEUEABLE, job):
            ssn.call(JOB_ENQUEUED, job)
            ssn.set_phase(job, o.PG_INQUEUE)
        else:
            job.failed_at = state.version
            ssn.not_enqueued[job.key] = _not_admitted(state, job)


def _never_fits(ssn: Session, job: JobInfo) -> str:
    """Why a pod of `job` could not fit any node even if the cluster were empty ('' if it could)."""
    state = ssn.state
    if not state.node_names:
        return "the cluster has no nodes"
    for task in job.tasks.values():
        if task.unknown_resource:
            return f"no node has {task.unknown_resource}"
        if not _fits_some_node(state, task.req):
            return f"pod {task.name} asks for more than any node has"
    return ""


def _not_admitted(state: ClusterState, job: JobInfo) -> str:
    """Why the queue plugins refused the job: for ever (its minimum exceeds the queue's capability or
    the whole cluster), else for now."""
    for limit, what in (
        (state.queue(job.queue).capability, f"queue {job.queue}'s capability"),
        (state.total, "the cluster"),
    ):
        over = [d for d in range(min(len(limit), len(job.min_resources))) if job.min_resources[d] > limit[d]]
        if over:
            amounts = ", ".join(
                f"{state.resources[d]} {from_units(state.resources[d], float(job.min_resources[d]))}" for d in over
            )
            return f"{what} can never hold the job's minimum ({amounts})"
    return f"queue {job.queue} cannot admit the job now (its share or the cluster is full)"


def _fits_some_node(state: ClusterState, req: Vector) -> bool:
    """Whether some schedulable node, empty, holds `req` (remembered per request until a node changes)."""
    cache = state.fit_cache
    if cache.get("__version__") != (state.node_version, len(state.resources)):
        cache.clear()
        cache["__version__"] = (state.node_version, len(state.resources))
    key = req.tobytes()
    found = cache.get(key)
    if found is None:
        rows = state.alloc[:, state.schedulable]
        found = cache[key] = not rows.shape[1] or bool(((rows >= req[:, None]).all(axis=0)).any())
    return bool(found)


def _release_stale(ssn: Session, timeout: float) -> None:
    for job in [j for j in ssn.state.jobs.values() if j.pg_phase == o.PG_INQUEUE]:
        since = job.inqueue_since
        if job.pg_phase == o.PG_INQUEUE and since is not None and ssn.now - since >= timeout and not job.count(READY):
            ssn.set_phase(job, o.PG_PENDING)
