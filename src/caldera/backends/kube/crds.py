"""caldera's CustomResourceDefinitions of Volcano's API, written from caldera's own job model and admission rules.

`crds()` returns four CRDs with Volcano's groups, versions, names and shapes, so Volcano manifests,
`kubectl`, `vcctl` and Volcano's clients work unchanged:

    jobs.batch.volcano.sh          v1alpha1  Namespaced  status subresource (as Volcano's)
    podgroups.scheduling.volcano.sh v1beta1  Namespaced  no subresource: status is written with the object (as Volcano's)
    queues.scheduling.volcano.sh    v1beta1  Cluster     status subresource (as Volcano's)
    commands.bus.volcano.sh        v1alpha1  Namespaced  (suspend / resume / open / close, as vcctl sends them)

Every schema is structural. The fields of a Job are those `caldera.core.jobmanifest` reads, its
enums those of `caldera.core.validation` (events, actions, plugins), and what Volcano's admission
webhook checks becomes OpenAPI rules and CEL `x-kubernetes-validations` the API server evaluates
(each one's message names the rule; the server prefixes the field path): minAvailable ≤ the sum of
the replicas, a task's minAvailable ≤ its replicas, unique task names, each event and exit code
handled once per policy list, `*` alone, an event and an exitCode never together, job-wide events
never with task- or pod-targeted actions, known plugins, dependsOn naming other tasks of the job,
job and task names that make pod names of at most 63 characters. A Volcano field caldera does not
implement is refused by a rule rather than pruned (silently dropped) by the server: caldera never
runs a job differently from what it asks.

What needs the cluster's state (the queue exists and is Open, the PriorityClass exists) or a search
(dependsOn cycles, the mpi plugin's role flags) is left to the controller: such a job gets a
condition and an event and never starts.

The Job's schema is in `jobcrd`, the schema building blocks are `openapi`'s. Invariant: this module only builds dicts; no I/O. `caldera kube manifests` prints them.
"""

from __future__ import annotations

from typing import Any

from caldera.backends.kube.jobcrd import job_crd
from caldera.backends.kube.openapi import (
    column,
    crd,
    free,
    integer,
    mapping,
    obj,
    resources,
    string,
    strings,
    timestamp,
    unsupported,
)
from caldera.core.objects import SCHEDULING_API
from caldera.core.validation import MAX_QUEUE_WEIGHT, QUEUE_STATES

__all__ = ["BUS_API", "command_crd", "crds", "job_crd", "podgroup_crd", "queue_crd"]
JSON = dict[str, Any]

BUS_API = "bus.volcano.sh/v1alpha1"
# Volcano's bus actions (vcctl sends AbortJob, ResumeJob, RestartJob, TerminateJob, OpenQueue, CloseQueue).
COMMAND_ACTIONS = (
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
    "SyncJob",
    "EnqueueJob",
    "SyncQueue",
    "OpenQueue",
    "CloseQueue",
)


# ---------------------------------------------------------------- PodGroup, Queue, Command


def podgroup_crd() -> JSON:
    spec = obj(
        {
            "minMember": integer(0),
            "minTaskMember": mapping(integer(0)),
            "minResources": resources(),
            "queue": string(default="default"),
            "priorityClassName": string(),
            "preemptable": {"type": "boolean"},
            "networkTopology": free(),
        }
    )
    condition = obj(
        {
            "type": string(),
            "status": string(),
            "reason": string(),
            "message": string(),
            "transitionID": string(),
            "lastTransitionTime": timestamp(),
        }
    )
    status = obj(
        {
            "phase": string(),
            "conditions": {"type": "array", "items": condition},
            "running": integer(0),
            "succeeded": integer(0),
            "failed": integer(0),
        }
    )
    root = obj(
        {"apiVersion": string(), "kind": string(), "metadata": {"type": "object"}, "spec": spec, "status": status}
    )
    columns = [
        column("STATUS", "string", ".status.phase"),
        column("minMember", "integer", ".spec.minMember"),
        column("RUNNINGS", "integer", ".status.running"),
        column("AGE", "date", ".metadata.creationTimestamp"),
        column("QUEUE", "string", ".spec.queue", priority=1),
    ]
    # Volcano's PodGroup has no status subresource: its scheduler writes status with the object.
    return crd(SCHEDULING_API, "PodGroup", "podgroups", "Namespaced", root, short=("pg",), columns=columns)


def queue_crd() -> JSON:
    spec = obj(
        {
            "weight": integer(1, maximum=MAX_QUEUE_WEIGHT, default=1),  # Volcano's webhook's defaults
            "capability": resources(),
            "deserved": resources(),
            "guarantee": obj({"resource": resources()}),
            "reclaimable": {"type": "boolean", "default": True},
            "parent": string(),
            "priority": integer(),
            "type": string(),
            "state": string(enum=list(QUEUE_STATES)),  # caldera's: the state a manifest asks for
            "extendClusters": {"type": "array", "items": free()},
            "affinity": free(),
            "dequeueStrategy": string(enum=["traverse"]),
        },
        rules=(
            unsupported("extendClusters", "has(self.extendClusters) && size(self.extendClusters) > 0"),
            unsupported("affinity", "has(self.affinity)"),
        ),
    )
    status = obj(
        {
            "state": string(enum=list(QUEUE_STATES)),
            "allocated": resources(),
            **{k: integer(0) for k in ("pending", "inqueue", "running", "completed", "unknown")},
            "reservation": obj({"nodes": strings(), "resource": resources()}),
        }
    )
    root = obj(
        {"apiVersion": string(), "kind": string(), "metadata": {"type": "object"}, "spec": spec, "status": status},
        rules=(
            (
                "!has(self.spec) || !has(self.spec.parent) || self.spec.parent != self.metadata.name",
                "a queue cannot be its own parent",
                ".spec.parent",
            ),
        ),
    )
    columns = [column("PARENT", "string", ".spec.parent"), column("STATE", "string", ".status.state")]
    return crd(SCHEDULING_API, "Queue", "queues", "Cluster", root, short=("q",), status=True, columns=columns)


def command_crd() -> JSON:
    target = obj(
        {
            "apiVersion": string(),
            "kind": string(),
            "name": string(),
            "uid": string(),
            "controller": {"type": "boolean"},
            "blockOwnerDeletion": {"type": "boolean"},
        },
        required=("apiVersion", "kind", "name", "uid"),
    )
    root = obj(
        {
            "apiVersion": string(),
            "kind": string(),
            "metadata": {"type": "object"},
            "action": string(enum=list(COMMAND_ACTIONS)),
            "target": target,
            "reason": string(),
            "message": string(),
        },
        required=("action",),
    )
    return crd(BUS_API, "Command", "commands", "Namespaced", root)


def crds() -> list[JSON]:
    """The four CRDs, in the order they are best created (a Job's PodGroup and Queue first)."""
    return [queue_crd(), podgroup_crd(), job_crd(), command_crd()]
