"""A job as the API server holds it, turned back into the control plane's objects (a restarted controller).

The Job's spec and the status a previous controller wrote, its PodGroup (`<job>-<uid>`) with its
phase and conditions, and its pods (those whose ownerReference is this Job's uid) rendered again
from the job as the controller created them, with what the API server knows of each: node,
phase, exit code, deletion. Nothing is recorded as happening: the plane re-syncs the job, as after
any change, and the scheduler binds only what is still unbound. `restore_job` puts it back into the plane and
tells the pod and status writers what already exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from caldera.backends.kube.convert import from_time, pod_exit_code
from caldera.controller import make_pod, make_podgroup, podgroup_name
from caldera.core import objects as o
from caldera.core.elastic import with_elastic_defaults
from caldera.scheduler.state import ClusterState
from caldera.system.control import ControlPlane
from caldera.system.kubepods import KubePods
from caldera.system.kubestatus import StatusWriter

JSON = dict[str, Any]


def restored_podgroup(job: o.Job, groups: Mapping[str, JSON]) -> o.PodGroup | None:
    body = groups.get(f"{job.namespace}/{podgroup_name(job)}")
    if body is None:
        return None
    pg = make_podgroup(job, from_time(body["metadata"].get("creationTimestamp")) or 0.0)
    pg.metadata.uid = str(body["metadata"].get("uid", ""))
    status = body.get("status") or {}
    pg.phase = str(status.get("phase") or o.PG_PENDING)
    pg.conditions = [
        o.PodGroupCondition(
            str(c.get("type", "")),
            str(c.get("status", "")),
            str(c.get("reason", "")),
            str(c.get("message", "")),
            from_time(c.get("lastTransitionTime")) or 0.0,
        )
        for c in status.get("conditions") or []
    ]
    return pg


def owned_by(pod: JSON, uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in pod["metadata"].get("ownerReferences") or [])


def restored_pods(job: o.Job, pods: Iterable[JSON], state: ClusterState) -> list[tuple[o.Pod, JSON]]:
    """The job's pods found in the API server (owned by this job's uid), each with its API object."""
    out: list[tuple[o.Pod, JSON]] = []
    for body in pods:
        meta = body["metadata"]
        if not owned_by(body, job.metadata.uid):
            continue
        annotations = meta.get("annotations") or {}
        task = job.spec.task(annotations.get(o.TASK_SPEC_KEY, ""))
        if task is None:
            continue
        try:
            index = int(annotations.get(o.TASK_INDEX_KEY, ""))
        except ValueError:
            continue
        priority = state.priority_of(task.template.spec.priority_class_name or job.spec.priority_class_name)
        pod = make_pod(job, task, index, priority, from_time(meta.get("creationTimestamp")) or 0.0)
        pod.metadata.uid = str(meta.get("uid", ""))
        # The version and retry annotations say which incarnation of the job this pod belongs to.
        pod.metadata.annotations.update(annotations)
        pod.node_name = (body.get("spec") or {}).get("nodeName") or ""
        pod.deletion_timestamp = from_time(meta.get("deletionTimestamp"))
        st = body.get("status") or {}
        phase = str(st.get("phase") or o.POD_PENDING)
        if phase == o.POD_PENDING and pod.node_name:
            phase = o.POD_RUNNING  # bound: running as far as the controller is concerned (as at a bind)
        pod.status = o.PodStatus(
            phase=phase,
            exit_code=pod_exit_code(body) if phase in (o.POD_SUCCEEDED, o.POD_FAILED) else None,
            start_time=from_time(st.get("startTime")),
            pod_ip=str(st.get("podIP") or ""),
        )
        out.append((pod, body))
    return out


def job_pods(job: o.Job, pods: Iterable[JSON]) -> list[JSON]:
    """The pods labelled with the job's name in its namespace (whichever incarnation made them)."""
    return [
        p
        for p in pods
        if p["metadata"].get("namespace") == job.namespace
        and (p["metadata"].get("labels") or {}).get(o.JOB_NAME_KEY) == job.name
    ]


def has_children(obj: JSON, groups: Mapping[str, JSON], pods: Iterable[JSON]) -> bool:
    """Whether a predecessor made the PodGroup or pods of the Job `obj` (it may have died before writing the
    job's status). From the API object: a new job is not parsed before its turn to be admitted."""
    meta = obj["metadata"]
    uid = str(meta.get("uid", ""))
    group = f"{meta.get('name', '')}-{uid}" if uid else str(meta.get("name", ""))  # controller.podgroup_name
    if f"{meta.get('namespace', 'default')}/{group}" in groups:
        return True
    return any(owned_by(p, uid) for p in pods)


def restore_job(
    plane: ControlPlane,
    writer: KubePods,
    status: StatusWriter,
    groups: Mapping[str, JSON],
    job: o.Job,
    job_status: o.JobStatus,
    pods: Iterable[JSON],
) -> None:
    """A job a previous controller handled: back into the plane with its PodGroup and pods, and what the API
    server holds of them noted as written (so nothing is created, bound or patched again)."""
    with_elastic_defaults(job)  # as `submit` does: the predecessor ran the job with them
    job.status = job_status
    group = groups.get(f"{job.namespace}/{podgroup_name(job)}")
    if group is not None:
        status.adopt_podgroup(group)
    pg = restored_podgroup(job, groups)
    found = restored_pods(job, pods, plane.state)
    for _, body in found:
        writer.adopt(body)
    plane.restore(job, pg, [(pod, 0) for pod, _ in found])
    status.adopt_job_status(job)
