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

Invariant: this module only builds dicts; no I/O. `caldera kube manifests` prints them.
"""

from __future__ import annotations

from typing import Any

from caldera.core.objects import JOB_API, JOB_PHASES, SCHEDULING_API
from caldera.core.validation import JOB_PLUGINS, MAX_QUEUE_WEIGHT, QUEUE_STATES, USER_ACTIONS, USER_EVENTS

JSON = dict[str, Any]

BUS_API = "bus.volcano.sh/v1alpha1"
CRD_API = "apiextensions.k8s.io/v1"
MAX_TASKS = 64  # bounds the cost of the CEL rules that compare tasks pairwise
MAX_POLICIES = 16  # a list's rules compare its policies pairwise: bounded, their cost stays in budget
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
DURATION = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"
# Events raised for a job as a whole, and the actions that act on the task or pod of an event.
JOB_SCOPED_EVENTS = ("Unknown", "JobUpdated")
TARGETED_ACTIONS = ("RestartTask", "RestartPod", "RestartPartition")
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


# ---------------------------------------------------------------- schema pieces


def _int(minimum: int | None = None, **more: Any) -> JSON:
    out: JSON = {"type": "integer", "format": "int32", **more}
    if minimum is not None:
        out["minimum"] = minimum
    return out


def _str(**more: Any) -> JSON:
    return {"type": "string", **more}


def _strings(**item: Any) -> JSON:
    return {"type": "array", "items": _str(**item)}


def _map(values: JSON) -> JSON:
    return {"type": "object", "additionalProperties": values}


Rule = tuple[str, str] | tuple[str, str, str]  # (CEL, message) or (CEL, message, the field it is about)


def _obj(properties: JSON, *, required: tuple[str, ...] = (), rules: tuple[Rule, ...] = ()) -> JSON:
    out: JSON = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    if rules:
        out["x-kubernetes-validations"] = [_rule(*r) for r in rules]
    return out


def _rule(rule: str, message: str, field: str = "") -> JSON:
    """A CEL rule; `field` (".minAvailable") makes the API server report the error at that field's path."""
    out: JSON = {"rule": rule, "message": message}
    if field:
        out["fieldPath"] = field
    return out


def _free(**more: Any) -> JSON:
    """An object the server keeps as given (a pod spec: Kubernetes checks it when the pod is created)."""
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, **more}


def _quantity() -> JSON:
    return {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True, "pattern": QUANTITY}


def _resources() -> JSON:
    return _map(_quantity())


def _time() -> JSON:
    return _str(format="date-time")


def _cel_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def _unsupported(field: str, present: str) -> Rule:
    return (f"!({present})", "is not supported by caldera: it would be ignored, so it is refused", f".{field}")


# ---------------------------------------------------------------- Job


def _policies() -> JSON:
    """A list of lifecycle policies (a job's or a task's), with the rules of `validation._policies`."""
    events = "(has(p.events) ? p.events : []) + (has(p.event) ? [p.event] : [])"
    handles = "(has(q.event) && q.event == e) || (has(q.events) && e in q.events)"
    targeted, job_wide = _cel_list(TARGETED_ACTIONS), _cel_list(JOB_SCOPED_EVENTS)
    policy = _obj(
        {
            "event": _str(enum=list(USER_EVENTS), maxLength=32),
            "events": {**_strings(enum=list(USER_EVENTS), maxLength=32), "maxItems": len(USER_EVENTS)},
            "exitCode": _int(),
            "action": _str(enum=list(USER_ACTIONS), maxLength=32),
            "timeout": _str(pattern=DURATION, maxLength=64),
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
    container = _free(
        properties={"name": _str(), "image": _str(minLength=1)},
        required=["name", "image"],
    )
    spec = _free(
        properties={"containers": {"type": "array", "minItems": 1, "items": container}},
        required=["containers"],
    )
    metadata = _free(
        properties={"labels": _map(_str()), "annotations": _map(_str()), "name": _str(), "namespace": _str()}
    )
    return _obj({"metadata": metadata, "spec": spec}, required=("spec",))


def _task() -> JSON:
    return _obj(
        {
            "name": _str(maxLength=63, pattern=DNS_LABEL),
            "replicas": _int(0),
            "minAvailable": _int(0),
            "template": _pod_template(),
            "policies": _policies(),
            "maxRetry": _int(-1),
            "dependsOn": _obj({"name": {**_strings(maxLength=63), "maxItems": 16}, "iteration": _str(enum=["all"])}),
            "topologyPolicy": _str(enum=["", "none"]),
            "partitionPolicy": _free(),
        },
        required=("replicas", "template"),
        rules=(
            (
                "!has(self.minAvailable) || self.minAvailable <= self.replicas",
                "must not be more than the task's replicas",
                ".minAvailable",
            ),
            _unsupported("partitionPolicy", "has(self.partitionPolicy)"),
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
    return _obj(
        {
            "schedulerName": _str(maxLength=63),
            "minAvailable": _int(0),
            "minSuccess": _int(1),
            "tasks": {"type": "array", "minItems": 1, "maxItems": MAX_TASKS, "items": _task()},
            "policies": _policies(),
            "plugins": {**_map({**_strings(maxLength=256), "maxItems": 32}), "maxProperties": 16},
            "queue": _str(default="default", minLength=1, maxLength=253, pattern=DNS_SUBDOMAIN),
            "maxRetry": _int(0, default=3),
            "ttlSecondsAfterFinished": _int(0),
            "priorityClassName": _str(maxLength=253, pattern=DNS_SUBDOMAIN),
            "runningEstimate": _str(),
            "volumes": {"type": "array", "items": _free()},
            "networkTopology": _free(),
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
                f"!has(self.plugins) || self.plugins.all(k, k in {_cel_list(JOB_PLUGINS)})",
                f"unknown job plugin; known: {', '.join(JOB_PLUGINS)}",
                ".plugins",
            ),
            _unsupported("volumes", "has(self.volumes) && size(self.volumes) > 0"),
            _unsupported("networkTopology", "has(self.networkTopology)"),
        ),
    )


def _job_status() -> JSON:
    counts = {k: _int(0) for k in ("pending", "running", "succeeded", "failed", "terminating", "unknown")}
    return _obj(
        {
            "state": _obj(
                {
                    "phase": _str(enum=list(JOB_PHASES)),
                    "reason": _str(),
                    "message": _str(),
                    "lastTransitionTime": _time(),
                }
            ),
            "minAvailable": _int(0),
            **counts,
            "version": _int(0),
            "retryCount": _int(0),
            "runningDuration": _str(),
            # caldera's controller keeps its start and completion times here (caldera.dev/start-time, ...):
            # a string map Volcano's own CRD has too, so its status fits either.
            "controlledResources": _map(_str()),
            "taskStatusCount": _map(_obj({"phase": _map(_int())})),
            "conditions": {
                "type": "array",
                "items": _obj({"status": _str(), "lastTransitionTime": _time()}, required=("status",)),
            },
        }
    )


def _job_names() -> str:
    """Pod names `<job>-<task>-<index>` are host names too: at most 63 characters (validation._tasks)."""
    last = "string(t.replicas > 0 ? t.replicas - 1 : 0)"
    return f"!has(self.spec) || self.spec.tasks.all(t, !has(t.name) || size(self.metadata.name) + size(t.name) + size({last}) + 2 <= 63)"


def job_crd() -> JSON:
    root = _obj(
        {
            "apiVersion": _str(),
            "kind": _str(),
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
        _column("STATUS", "string", ".status.state.phase"),
        _column("minAvailable", "integer", ".status.minAvailable"),
        _column("RUNNINGS", "integer", ".status.running"),
        _column("AGE", "date", ".metadata.creationTimestamp"),
        _column("QUEUE", "string", ".spec.queue", priority=1),
    ]
    return _crd(JOB_API, "Job", "jobs", "Namespaced", root, short=("vcjob", "vj"), status=True, columns=columns)


# ---------------------------------------------------------------- PodGroup, Queue, Command


def podgroup_crd() -> JSON:
    spec = _obj(
        {
            "minMember": _int(0),
            "minTaskMember": _map(_int(0)),
            "minResources": _resources(),
            "queue": _str(default="default"),
            "priorityClassName": _str(),
            "preemptable": {"type": "boolean"},
            "networkTopology": _free(),
        }
    )
    condition = _obj(
        {
            "type": _str(),
            "status": _str(),
            "reason": _str(),
            "message": _str(),
            "transitionID": _str(),
            "lastTransitionTime": _time(),
        }
    )
    status = _obj(
        {
            "phase": _str(),
            "conditions": {"type": "array", "items": condition},
            "running": _int(0),
            "succeeded": _int(0),
            "failed": _int(0),
        }
    )
    root = _obj({"apiVersion": _str(), "kind": _str(), "metadata": {"type": "object"}, "spec": spec, "status": status})
    columns = [
        _column("STATUS", "string", ".status.phase"),
        _column("minMember", "integer", ".spec.minMember"),
        _column("RUNNINGS", "integer", ".status.running"),
        _column("AGE", "date", ".metadata.creationTimestamp"),
        _column("QUEUE", "string", ".spec.queue", priority=1),
    ]
    # Volcano's PodGroup has no status subresource: its scheduler writes status with the object.
    return _crd(SCHEDULING_API, "PodGroup", "podgroups", "Namespaced", root, short=("pg",), columns=columns)


def queue_crd() -> JSON:
    spec = _obj(
        {
            "weight": _int(1, maximum=MAX_QUEUE_WEIGHT, default=1),  # Volcano's webhook's defaults
            "capability": _resources(),
            "deserved": _resources(),
            "guarantee": _obj({"resource": _resources()}),
            "reclaimable": {"type": "boolean", "default": True},
            "parent": _str(),
            "priority": _int(),
            "type": _str(),
            "state": _str(enum=list(QUEUE_STATES)),  # caldera's: the state a manifest asks for
            "extendClusters": {"type": "array", "items": _free()},
            "affinity": _free(),
            "dequeueStrategy": _str(enum=["traverse"]),
        },
        rules=(
            _unsupported("extendClusters", "has(self.extendClusters) && size(self.extendClusters) > 0"),
            _unsupported("affinity", "has(self.affinity)"),
        ),
    )
    status = _obj(
        {
            "state": _str(enum=list(QUEUE_STATES)),
            "allocated": _resources(),
            **{k: _int(0) for k in ("pending", "inqueue", "running", "completed", "unknown")},
            "reservation": _obj({"nodes": _strings(), "resource": _resources()}),
        }
    )
    root = _obj(
        {"apiVersion": _str(), "kind": _str(), "metadata": {"type": "object"}, "spec": spec, "status": status},
        rules=(
            (
                "!has(self.spec) || !has(self.spec.parent) || self.spec.parent != self.metadata.name",
                "a queue cannot be its own parent",
                ".spec.parent",
            ),
        ),
    )
    columns = [_column("PARENT", "string", ".spec.parent"), _column("STATE", "string", ".status.state")]
    return _crd(SCHEDULING_API, "Queue", "queues", "Cluster", root, short=("q",), status=True, columns=columns)


def command_crd() -> JSON:
    target = _obj(
        {
            "apiVersion": _str(),
            "kind": _str(),
            "name": _str(),
            "uid": _str(),
            "controller": {"type": "boolean"},
            "blockOwnerDeletion": {"type": "boolean"},
        },
        required=("apiVersion", "kind", "name", "uid"),
    )
    root = _obj(
        {
            "apiVersion": _str(),
            "kind": _str(),
            "metadata": {"type": "object"},
            "action": _str(enum=list(COMMAND_ACTIONS)),
            "target": target,
            "reason": _str(),
            "message": _str(),
        },
        required=("action",),
    )
    return _crd(BUS_API, "Command", "commands", "Namespaced", root)


def crds() -> list[JSON]:
    """The four CRDs, in the order they are best created (a Job's PodGroup and Queue first)."""
    return [queue_crd(), podgroup_crd(), job_crd(), command_crd()]


def _column(name: str, kind: str, path: str, priority: int = 0) -> JSON:
    out: JSON = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        out["priority"] = priority
    return out


def _crd(
    api_version: str,
    kind: str,
    plural: str,
    scope: str,
    schema: JSON,
    *,
    short: tuple[str, ...] = (),
    status: bool = False,
    columns: list[JSON] | None = None,
) -> JSON:
    group, version = api_version.split("/")
    names: JSON = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()}
    if short:
        names["shortNames"] = list(short)
    served: JSON = {"name": version, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
    if status:
        served["subresources"] = {"status": {}}
    if columns:
        served["additionalPrinterColumns"] = columns
    return {
        "apiVersion": CRD_API,
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "labels": {"app.kubernetes.io/part-of": "caldera"}},
        "spec": {"group": group, "names": names, "scope": scope, "versions": [served]},
    }
