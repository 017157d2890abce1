"""The Job CRD (`batch.volcano.sh/v1alpha1`), written from caldera's job model and admission rules (`crds.py`
says what the four CRDs are and why; this is the largest of them).

The fields of a Job are those `caldera.core.jobmanifest` reads, its enums those of `caldera.core.validation`,
and what Volcano's admission webhook checks becomes OpenAPI rules and CEL `x-kubernetes-validations`.
Invariant: this module only builds dicts; no I/O.
"""

from __future__ import annotations

from typing import Any

from caldera.backends.kube.openapi import (
    cel_list,
    column,
    crd,
    free,
    integer,
    mapping,
    obj,
    string,
    strings,
    timestamp,
    unsupported,
)
from caldera.core.objects import JOB_API, JOB_PHASES
from caldera.core.validation import JOB_PLUGINS, USER_ACTIONS, USER_EVENTS

JSON = dict[str, Any]

MAX_TASKS = 64  # bounds the cost of the CEL rules that compare tasks pairwise
MAX_POLICIES = 16  # a list's rules compare its policies pairwise: bounded, their cost stays in budget
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DURATION = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"
# Events raised for a job as a whole, and the actions that act on the task or pod of an event.
JOB_SCOPED_EVENTS = ("Unknown", "JobUpdated")
TARGETED_ACTIONS = ("RestartTask", "RestartPod", "RestartPartition")


# ---------------------------------------------------------------- Job


def _policies() -> JSON:
    """A list of lifecycle policies (a job's or a task's), with the rules of `validation._policies`."""
    events = "(has(p.events) ? p.events : []) + (has(p.event) ? [p.event] : [])"
    handles = "(has(q.event) && q.event == e) || (has(q.events) && e in q.events)"
    targeted, job_wide = cel_list(TARGETED_ACTIONS), cel_list(JOB_SCOPED_EVENTS)
    policy = obj(
        {
            "event": string(enum=list(USER_EVENTS), maxLength=32),
            "events": {**strings(enum=list(USER_EVENTS), maxLength=32), "maxItems": len(USER_EVENTS)},
            "exitCode": integer(),
            "action": string(enum=list(USER_ACTIONS), maxLength=32),
            "timeout": string(pattern=DURATION, maxLength=64),
        },
        required=("action",),
        rules=(
            ("has(self.event) || has(self.events) || has(self.exitCode)", "must set an event, events or an exitCode"),
            (
                "!((has(self.event) || has(self.events)) && has(self.exitCode))",
                "must not set both an event and an exitCode",
            ),
            ("!has(self.exitCode) || self.exitCode != 0", "must not be 0: exit code 0 is success", ".exitCode"),
            (
                f"!(self.action in {targeted}) || !((has(self.event) && self.event in {job_wide})"
                f" || (has(self.events) && self.events.exists(e, e in {job_wide})))",
                "this action acts on the task or pod of the event, but Unknown and JobUpdated are raised for the whole job",
                ".action",
            ),
        ),
    )
    return {
        "type": "array",
        "maxItems": MAX_POLICIES,
        "items": policy,
        "x-kubernetes-validations": [
            {
                "rule": f"self.all(p, ({events}).all(e, self.exists_one(q, {handles})))",
                "message": "each event is handled by one policy of the list only",
            },
            {
                "rule": "self.all(p, !has(p.exitCode) || self.exists_one(q, has(q.exitCode) && q.exitCode == p.exitCode))",
                "message": "each exit code is handled by one policy of the list only",
            },
            {
                "rule": f"!self.exists(p, '*' in ({events})) || self.all(p, ({events}).all(e, e == '*'))",
                "message": '"*" matches every event, so no other event may appear in the same list',
            },
        ],
    }


def _pod_template() -> JSON:
    container = free(
        properties={"name": string(), "image": string(minLength=1)},
        required=["name", "image"],
    )
    spec = free(
        properties={"containers": {"type": "array", "minItems": 1, "items": container}},
        required=["containers"],
    )
    metadata = free(
        properties={
            "labels": mapping(string()),
            "annotations": mapping(string()),
            "name": string(),
            "namespace": string(),
        }
    )
    return obj({"metadata": metadata, "spec": spec}, required=("spec",))


def _task() -> JSON:
    return obj(
        {
            "name": string(maxLength=63, pattern=DNS_LABEL),
            "replicas": integer(0),
            "minAvailable": integer(0),
            "template": _pod_template(),
            "policies": _policies(),
            "maxRetry": integer(-1),
            "dependsOn": obj({"name": {**strings(maxLength=63), "maxItems": 16}, "iteration": string(enum=["all"])}),
            "topologyPolicy": string(enum=["", "none"]),
            "partitionPolicy": free(),
        },
        required=("replicas", "template"),
        rules=(
            (
                "!has(self.minAvailable) || self.minAvailable <= self.replicas",
                "must not be more than the task's replicas",
                ".minAvailable",
            ),
            unsupported("partitionPolicy", "has(self.partitionPolicy)"),
            (
                "!has(self.dependsOn) || !has(self.dependsOn.name) || !has(self.name)"
                " || !self.dependsOn.name.exists(n, n == self.name)",
                "a task cannot depend on itself",
                ".dependsOn",
            ),
        ),
    )


def _job_spec() -> JSON:
    replicas = "self.tasks.map(t, t.replicas).sum()"
    names = "self.tasks.exists(u, has(u.name) && u.name == n)"
    return obj(
        {
            "schedulerName": string(maxLength=63),
            "minAvailable": integer(0),
            "minSuccess": integer(1),
            "tasks": {"type": "array", "minItems": 1, "maxItems": MAX_TASKS, "items": _task()},
            "policies": _policies(),
            "plugins": {**mapping({**strings(maxLength=256), "maxItems": 32}), "maxProperties": 16},
            "queue": string(default="default", minLength=1, maxLength=253, pattern=DNS_SUBDOMAIN),
            "maxRetry": integer(0, default=3),
            "ttlSecondsAfterFinished": integer(0),
            "priorityClassName": string(maxLength=253, pattern=DNS_SUBDOMAIN),
            "runningEstimate": string(),
            "volumes": {"type": "array", "items": free()},
            "networkTopology": free(),
        },
        required=("tasks",),
        rules=(
            (
                f"!has(self.minAvailable) || self.minAvailable <= {replicas}",
                "must not be more than the replicas of all tasks",
                ".minAvailable",
            ),
            (
                f"!has(self.minSuccess) || self.minSuccess <= {replicas}",
                "must not be more than the replicas of all tasks",
                ".minSuccess",
            ),
            (
                "self.tasks.all(t, !has(t.name) || self.tasks.exists_one(u, has(u.name) && u.name == t.name))",
                "task names must be unique",
                ".tasks",
            ),
            (
                f"self.tasks.all(t, !has(t.dependsOn) || !has(t.dependsOn.name) || t.dependsOn.name.all(n, {names}))",
                "dependsOn must name tasks of this job",
                ".tasks",
            ),
            (
                f"!has(self.plugins) || self.plugins.all(k, k in {cel_list(JOB_PLUGINS)})",
                f"unknown job plugin; known: {', '.join(JOB_PLUGINS)}",
                ".plugins",
            ),
            unsupported("volumes", "has(self.volumes) && size(self.volumes) > 0"),
            unsupported("networkTopology", "has(self.networkTopology)"),
        ),
    )


def _job_status() -> JSON:
    counts = {k: integer(0) for k in ("pending", "running", "succeeded", "failed", "terminating", "unknown")}
    return obj(
        {
            "state": obj(
                {
                    "phase": string(enum=list(JOB_PHASES)),
                    "reason": string(),
                    "message": string(),
                    "lastTransitionTime": timestamp(),
                }
            ),
            "minAvailable": integer(0),
            **counts,
            "version": integer(0),
            "retryCount": integer(0),
            "runningDuration": string(),
            # caldera's controller keeps its start and completion times here (caldera.dev/start-time, ...):
            # a string map Volcano's own CRD has too, so its status fits either.
            "controlledResources": mapping(string()),
            "taskStatusCount": mapping(obj({"phase": mapping(integer())})),
            "conditions": {
                "type": "array",
                "items": obj({"status": string(), "lastTransitionTime": timestamp()}, required=("status",)),
            },
        }
    )


def _job_names() -> str:
    """Pod names `<job>-<task>-<index>` are host names too: at most 63 characters (validation._tasks)."""
    last = "string(t.replicas > 0 ? t.replicas - 1 : 0)"
    return f"!has(self.spec) || self.spec.tasks.all(t, !has(t.name) || size(self.metadata.name) + size(t.name) + size({last}) + 2 <= 63)"


def job_crd() -> JSON:
    root = obj(
        {
            "apiVersion": string(),
            "kind": string(),
            "metadata": {"type": "object"},
            "spec": _job_spec(),
            "status": _job_status(),
        },
        required=("spec",),
        rules=(
            (
                f"self.metadata.name.matches('{DNS_LABEL}') && size(self.metadata.name) <= 63",
                "a job's name must be a DNS-1123 label of at most 63 characters (its pods' host names start with it)",
            ),
            (_job_names(), "a pod name <job>-<task>-<index> would be longer than 63 characters", ".spec.tasks"),
        ),
    )
    columns = [
        column("STATUS", "string", ".status.state.phase"),
        column("minAvailable", "integer", ".status.minAvailable"),
        column("RUNNINGS", "integer", ".status.running"),
        column("AGE", "date", ".metadata.creationTimestamp"),
        column("QUEUE", "string", ".spec.queue", priority=1),
    ]
    return crd(JOB_API, "Job", "jobs", "Namespaced", root, short=("vcjob", "vj"), status=True, columns=columns)
