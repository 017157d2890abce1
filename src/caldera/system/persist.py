"""Objects to and from their stored form (Kubernetes-shaped JSON), for the embedded cluster's store.

A job is stored as its manifest plus status; pods and podgroups are stored with
what cannot be derived from their job (phase, node, exit code, restart count,
attempt, deletion time, host ports and GPU ids). On restore they are rendered
again from the job (as the controller created them) and the stored facts are
put back, so a restored object is the object the daemon had.

A deleted job's pods still stopping are stored without their job: what a restarted daemon needs of
them (their node, requests, GPUs, group and queue, deletion time and grace) is in their record
(`stopping_pod_from_record`).
"""

from __future__ import annotations

from typing import Any

from caldera.controller import make_pod, make_podgroup
from caldera.core import objects as o
from caldera.core.jobmanifest import parse_job
from caldera.core.meta import ObjectMeta
from caldera.core.podspec import Container, PodSpec
from caldera.core.resources import parse_resource_list

JSON = dict[str, Any]


def job_record(job: o.Job) -> JSON:
    body = job.to_dict()
    status = body["status"]
    status["startTime"] = job.status.start_time
    status["completionTime"] = job.status.completion_time
    body["metadata"]["creationTimestamp"] = job.metadata.creation_timestamp
    return body


def job_from_record(body: JSON) -> o.Job:
    meta = body.get("metadata", {})
    manifest = {
        "apiVersion": body.get("apiVersion", o.JOB_API),
        "kind": "Job",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace", "default"),
            "labels": meta.get("labels", {}),
            "annotations": meta.get("annotations", {}),
        },
        "spec": body["spec"],
    }
    job = parse_job(manifest, f"stored job {meta.get('namespace')}/{meta.get('name')}")
    job.metadata.uid = meta.get("uid", "")
    job.metadata.creation_timestamp = float(meta.get("creationTimestamp") or 0.0)
    job.status = status_from_record(body.get("status", {}))
    return job


def status_from_record(s: JSON) -> o.JobStatus:
    state = s.get("state", {})
    return o.JobStatus(
        phase=state.get("phase", o.PENDING),
        reason=state.get("reason", ""),
        message=state.get("message", ""),
        last_transition_time=float(state.get("lastTransitionTime") or 0.0),
        retry_count=int(s.get("retryCount", 0)),
        version=int(s.get("version", 0)),
        min_available=int(s.get("minAvailable", 0)),
        pending=int(s.get("pending", 0)),
        running=int(s.get("running", 0)),
        succeeded=int(s.get("succeeded", 0)),
        failed=int(s.get("failed", 0)),
        terminating=int(s.get("terminating", 0)),
        unknown=int(s.get("unknown", 0)),
        start_time=s.get("startTime"),
        completion_time=s.get("completionTime"),
        conditions=[(c["status"], float(c["lastTransitionTime"])) for c in s.get("conditions", [])],
        pod_retries={str(k): int(v) for k, v in s.get("podRetries", {}).items()},
    )


def podgroup_record(pg: o.PodGroup) -> JSON:
    body = pg.to_dict()
    body["spec"]["job"] = pg.job
    return body


def podgroup_from_record(body: JSON, job: o.Job) -> o.PodGroup:
    pg = make_podgroup(job, float(body["metadata"].get("creationTimestamp") or 0.0))
    pg.metadata.uid = body["metadata"].get("uid", "")
    status = body.get("status", {})
    pg.phase = status.get("phase", o.PG_PENDING)
    pg.conditions = [
        o.PodGroupCondition(
            c["type"], c["status"], c.get("reason", ""), c.get("message", ""), float(c.get("lastTransitionTime") or 0)
        )
        for c in status.get("conditions", [])
    ]
    return pg


def pod_record(pod: o.Pod, attempt: int, ports: dict[str, int], gpus: list[int], ended_uid: str | None = None) -> JSON:
    """A pod's stored form; `ended_uid` marks a pod kept after it was removed (that uid is its job's)."""
    body = pod.to_dict()
    body["spec"].update({"job": pod.job, "task": pod.task, "index": pod.index})
    body["spec"]["terminationGracePeriodSeconds"] = pod.spec.termination_grace_period_seconds
    body["metadata"]["creationTimestamp"] = pod.metadata.creation_timestamp
    body["metadata"]["deletionTimestamp"] = pod.deletion_timestamp
    body["caldera"] = {"attempt": attempt, "ports": ports, "gpus": gpus}
    if ended_uid is not None:
        body["caldera"]["endedJobUid"] = ended_uid
    return body


def ended_uid(body: JSON) -> str | None:
    """The job uid of a pod kept after it was removed; None for a live pod."""
    uid = body.get("caldera", {}).get("endedJobUid")
    return None if uid is None else str(uid)


def pod_from_record(body: JSON, job: o.Job, priority: int) -> tuple[o.Pod, int, list[int]] | None:
    """The pod, its attempt number and its GPU ids; None if its task no longer exists."""
    spec = body.get("spec", {})
    task = job.spec.task(spec.get("task", ""))
    if task is None:
        return None
    meta = body.get("metadata", {})
    pod = make_pod(job, task, int(spec.get("index", 0)), priority, float(meta.get("creationTimestamp") or 0.0))
    pod.metadata.uid = meta.get("uid", "")
    pod.metadata.annotations.update(meta.get("annotations", {}))
    pod.metadata.labels.update(meta.get("labels", {}))
    pod.node_name = spec.get("nodeName", "")
    pod.deletion_timestamp = meta.get("deletionTimestamp")
    pod.status = _pod_status(body.get("status", {}))
    extra = body.get("caldera", {})
    return pod, int(extra.get("attempt", 0)), [int(g) for g in extra.get("gpus", [])]


def stopping_pod_from_record(body: JSON) -> tuple[o.Pod, int, list[int]] | None:
    """A pod of a deleted job that was stopping on a node, with its attempt number and GPU ids: its job is
    gone, so it is rebuilt from its record alone (its requests as one container's). None for any other pod
    (not on a node, ended, not being deleted, kept for people)."""
    meta, spec, status = body.get("metadata", {}), body.get("spec", {}), body.get("status", {})
    if (
        not spec.get("nodeName")
        or meta.get("deletionTimestamp") is None
        or status.get("phase") in (o.POD_SUCCEEDED, o.POD_FAILED)
        or ended_uid(body) is not None
    ):
        return None
    requests = parse_resource_list(spec.get("resources", {}))
    pod = o.Pod(
        metadata=ObjectMeta(
            name=meta["name"],
            namespace=meta.get("namespace", "default"),
            uid=meta.get("uid", ""),
            creation_timestamp=float(meta.get("creationTimestamp") or 0.0),
            labels=dict(meta.get("labels", {})),
            annotations=dict(meta.get("annotations", {})),
        ),
        spec=PodSpec(
            containers=(Container("main", requests=requests),),
            restart_policy=spec.get("restartPolicy", "Never"),
            priority_class_name=spec.get("priorityClassName", ""),
            termination_grace_period_seconds=float(spec.get("terminationGracePeriodSeconds", 30.0)),
        ),
        job=spec.get("job", ""),
        task=spec.get("task", ""),
        index=int(spec.get("index", 0)),
        node_name=spec["nodeName"],
        priority=int(spec.get("priority", 0)),
        deletion_timestamp=float(meta["deletionTimestamp"]),
        status=_pod_status(status),
    )
    extra = body.get("caldera", {})
    return pod, int(extra.get("attempt", 0)), [int(g) for g in extra.get("gpus", [])]


def _pod_status(st: JSON) -> o.PodStatus:
    return o.PodStatus(
        phase=st.get("phase", o.POD_PENDING),
        reason=st.get("reason", ""),
        message=st.get("message", ""),
        exit_code=st.get("exitCode"),
        start_time=st.get("startTime"),
        finish_time=st.get("finishTime"),
        restart_count=int(st.get("restartCount", 0)),
        pod_ip=st.get("podIP", ""),
    )
