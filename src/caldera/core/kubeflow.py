"""Kubeflow's training jobs (`kubeflow.org/v1` TFJob, PyTorchJob, MPIJob, PaddleJob) as the Volcano Job they run as.

`to_volcano` reads a manifest as Kubeflow's training-operator (release 1.9) defines and
defaults it, and returns the equivalent `batch.volcano.sh/v1alpha1` Job, which caldera
then runs as any other (`docs/kubeflow.md` has the whole table):

- each replica type is a task named as the operator names its pods' middle part
  (`PS` → `ps`: pods `<job>-ps-0`, as Kubeflow's), with the replica's template, `replicas`
  (default 1; an MPIJob's Worker 0), and the framework's container first (it is the one
  that runs here) with its named port added when absent (`tfjob-port` 2222,
  `pytorchjob-port` 23456, paddle's `master` 36543), as the operator's defaulting does;
- the gang is `runPolicy.schedulingPolicy` (`minAvailable`, default all replicas; `queue`;
  `priorityClass`), `ttlSecondsAfterFinished` carries over;
- the environment each operator sets (TF_CONFIG; MASTER_ADDR, WORLD_SIZE, RANK, PET_*;
  PADDLE_MASTER, PADDLE_NNODES, ...; the MPI hostfile) comes from caldera's `kubeflow`
  job plugin (`caldera.controller.frameworks.kubeflow`), told the kind and its settings;
- restart policies: `OnFailure`/`Always` restart the pod in place; `Never` ends the job
  when a pod fails (PodFailed → TerminateJob: Volcano has no action that fails a job at
  once); `ExitCode` re-creates a pod that died of exit code 128-255 (RestartPod, each one
  of the job's maxRetry) and ends the job on any other. `runPolicy.backoffLimit: N`, which
  Kubeflow counts against the in-place restarts of OnFailure/Always replicas, makes those
  restart the whole job instead, N times at most (Volcano's maxRetry), then fail it (N = 0:
  the first failure ends the job);
- the job completes when its chief does: TF's Chief or Master (else all its Workers),
  PyTorch's and Paddle's Master (else all pods), MPI's Launcher; the pods still running
  are then stopped, whatever `cleanPodPolicy` says (caldera leaves no pod of a finished
  job running, and keeps every ended pod and its log until the job is deleted);
- the job keeps its kind: label `volcano.sh/job-type: <Kind>` and annotation
  `caldera.dev/applied-as: kubeflow.org/v1/<Kind>` (`caldera.core.jobkind`).

Fields caldera cannot honour are refused, each naming its path (`runPolicy.activeDeadlineSeconds`,
`elasticPolicy`, `enableDynamicWorker: true`, ...), never ignored. Errors found in the
Volcano Job the manifest becomes are reported against the manifest's own paths.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from caldera.core.errors import FieldError, ValidationError
from caldera.core.jobkind import APPLIED_AS, JOB_TYPE_LABEL
from caldera.core.objects import JOB_API
from caldera.core.schema import Doc, FieldReader, child, describe

KUBEFLOW_API = "kubeflow.org/v1"
PLUGIN = "kubeflow"
RETRYABLE_EXIT_CODES = range(128, 256)  # Kubeflow's ExitCode policy: 1-127 permanent, 128-255 retryable
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_RUN_POLICY = ("cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit")
_SCHEDULING = ("minAvailable", "queue", "minResources", "priorityClass", "scheduleTimeoutSeconds")
_REPLICA = ("replicas", "template", "restartPolicy")
_RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
_CLEAN_POD_POLICIES = ("All", "Running", "None")


@dataclass(frozen=True, slots=True)
class Framework:
    kind: str
    specs: str  # the spec field holding the replica specs
    types: tuple[str, ...]  # replica types, in the order their tasks are written
    container: str  # the container the operator sets its environment in ("": the first)
    port_name: str  # its named port ("": none)
    port: int
    restart: str  # the default restart policy of a replica
    chiefs: tuple[str, ...]  # the first of these types present completes the job when it does
    fields: tuple[str, ...]  # the kind's own spec fields


FRAMEWORKS = {
    f.kind: f
    for f in (
        Framework(
            "TFJob",
            "tfReplicaSpecs",
            ("Chief", "Master", "PS", "Worker", "Evaluator"),
            "tensorflow",
            "tfjob-port",
            2222,
            "Never",
            ("Chief", "Master", "Worker"),
            ("successPolicy", "enableDynamicWorker"),
        ),
        Framework(
            "PyTorchJob",
            "pytorchReplicaSpecs",
            ("Master", "Worker"),
            "pytorch",
            "pytorchjob-port",
            23456,
            "OnFailure",
            ("Master",),
            ("elasticPolicy", "nprocPerNode"),
        ),
        Framework(
            "MPIJob",
            "mpiReplicaSpecs",
            ("Launcher", "Worker"),
            "",
            "",
            0,
            "Never",
            ("Launcher",),
            ("slotsPerWorker", "cleanPodPolicy", "mainContainer"),
        ),
        Framework(
            "PaddleJob",
            "paddleReplicaSpecs",
            ("Master", "Worker"),
            "paddle",
            "master",
            36543,
            "OnFailure",
            ("Master",),
            ("elasticPolicy",),
        ),
    )
}


def is_kubeflow(doc: object) -> bool:
    return isinstance(doc, Mapping) and doc.get("apiVersion") == KUBEFLOW_API and doc.get("kind") in FRAMEWORKS


def as_volcano(doc: Mapping[str, Any], source: str = "") -> dict[str, Any]:
    """`doc` as the Volcano Job it runs as when it is a Kubeflow job; any other manifest as it is."""
    return to_volcano(doc, source) if is_kubeflow(doc) else dict(doc)


def to_volcano(doc: Mapping[str, Any], source: str = "") -> dict[str, Any]:
    """The Volcano Job manifest of a Kubeflow training job; a ValidationError with every problem otherwise."""
    fw = FRAMEWORKS[str(doc.get("kind"))]
    r = FieldReader()
    top = r.top(doc, source, api=KUBEFLOW_API, kind=fw.kind)
    meta = _metadata(r, top)
    spec = r.sub(top, "spec", "") or {}
    if top.get("spec") is None:
        r.error("spec", "is required")
    r.known(spec, "spec", ("runPolicy", fw.specs, "schedulerName", *fw.fields))
    _refuse(r, spec, fw)
    replicas = _replica_specs(r, spec, fw)
    run = r.sub(spec, "runPolicy", "spec") or {}
    r.known(run, "spec.runPolicy", (*_RUN_POLICY, "schedulingPolicy", "suspend", "managedBy"))
    r.refuse_unsupported(run, "spec.runPolicy", {"activeDeadlineSeconds": (), "suspend": (False,), "managedBy": ()})
    r.choice(run, "cleanPodPolicy", "spec.runPolicy", _CLEAN_POD_POLICIES, "None")
    sched = r.sub(run, "schedulingPolicy", "spec.runPolicy") or {}
    r.known(sched, "spec.runPolicy.schedulingPolicy", _SCHEDULING)
    r.refuse_unsupported(sched, "spec.runPolicy.schedulingPolicy", {"minResources": (), "scheduleTimeoutSeconds": ()})
    backoff = _non_negative(r, run, "backoffLimit", "spec.runPolicy")
    tasks = [_task(r, fw, rtype, raw, spec, backoff) for rtype, raw in replicas]
    r.raise_if_errors(source)
    total = sum(int(t["replicas"]) for t in tasks)
    job: dict[str, Any] = {
        "schedulerName": r.string(spec, "schedulerName", "spec") or "volcano",
        "minAvailable": r.integer(sched, "minAvailable", "spec.runPolicy.schedulingPolicy") or total,
        "queue": r.string(sched, "queue", "spec.runPolicy.schedulingPolicy") or "default",
    }
    if priority := r.string(sched, "priorityClass", "spec.runPolicy.schedulingPolicy"):
        job["priorityClassName"] = priority
    if (ttl := _non_negative(r, run, "ttlSecondsAfterFinished", "spec.runPolicy")) is not None:
        job["ttlSecondsAfterFinished"] = ttl
    if backoff:
        job["maxRetry"] = backoff
    plugins: dict[str, list[str]] = {PLUGIN: _plugin_flags(r, spec, fw), "svc": []}
    if fw.kind == "MPIJob":
        plugins["ssh"] = []  # mpirun reaches the workers (Volcano adds it with its mpi plugin)
    job["plugins"] = plugins
    job["tasks"] = tasks
    r.raise_if_errors(source)
    return {"apiVersion": JOB_API, "kind": "Job", "metadata": meta, "spec": job}


def warnings(doc: Mapping[str, Any]) -> list[str]:
    """What the operator would warn about: a pod template's restartPolicy, which the replica's replaces."""
    fw = FRAMEWORKS.get(str(doc.get("kind")))
    specs = (doc.get("spec") or {}).get(fw.specs) if fw is not None and isinstance(doc.get("spec"), Mapping) else None
    if fw is None or not isinstance(specs, Mapping):
        return []
    out = []
    for key, replica in specs.items():
        if not isinstance(replica, Mapping):
            continue
        pod = (replica.get("template") or {}).get("spec") if isinstance(replica.get("template"), Mapping) else None
        given = pod.get("restartPolicy") if isinstance(pod, Mapping) else None
        wanted = replica.get("restartPolicy") or fw.restart
        if given is not None and given != wanted:
            out.append(
                f"spec.{fw.specs}.{key}.template.spec.restartPolicy {given} is replaced by the replica's "
                f"restartPolicy {wanted} (set spec.{fw.specs}.{key}.restartPolicy), as Kubeflow does"
            )
    return out


def volcano_path(path: str, manifest: Mapping[str, Any]) -> str:
    """A field path of the Volcano Job `to_volcano` made, as the Kubeflow manifest spells it."""
    fw = FRAMEWORKS.get(str(manifest.get("kind")))
    if fw is None:
        return path
    m = re.match(r"^spec\.tasks\[(\d+)\](.*)$", path)
    if m:
        present = _present_types(manifest, fw)
        i = int(m.group(1))
        return f"spec.{fw.specs}.{present[i]}{m.group(2)}" if i < len(present) else path
    renamed = {
        "spec.minAvailable": "spec.runPolicy.schedulingPolicy.minAvailable",
        "spec.queue": "spec.runPolicy.schedulingPolicy.queue",
        "spec.priorityClassName": "spec.runPolicy.schedulingPolicy.priorityClass",
        "spec.maxRetry": "spec.runPolicy.backoffLimit",
    }
    return renamed.get(path, path)


# ---------------------------------------------------------------- parts


def _metadata(r: FieldReader, top: Doc) -> dict[str, Any]:
    meta = r.sub(top, "metadata", "") or {}
    if not r.required(meta, "name", "metadata"):
        return {"name": ""}
    name = r.string(meta, "name", "metadata")
    if name and not _DNS1035.match(name):
        r.error("metadata.name", f'"{name}" must start with a letter, then lower-case letters, digits and "-"')
    out: dict[str, Any] = {"name": name}
    if namespace := r.string(meta, "namespace", "metadata"):
        out["namespace"] = namespace
    kind = str(top.get("kind"))
    out["labels"] = {**r.string_map(meta, "labels", "metadata"), JOB_TYPE_LABEL: kind}
    out["annotations"] = {**r.string_map(meta, "annotations", "metadata"), APPLIED_AS: f"{KUBEFLOW_API}/{kind}"}
    return out


def _refuse(r: FieldReader, spec: Doc, fw: Framework) -> None:
    if spec.get("elasticPolicy") is not None:
        rule = (
            "is not supported by caldera: for elastic training use `caldera submit pytorch --elastic`, "
            "or a Volcano Job whose task has minAvailable below its replicas (docs/elastic.md)"
        )
        r.error("spec.elasticPolicy", rule)
    if r.boolean(spec, "enableDynamicWorker", "spec", False):
        r.error("spec.enableDynamicWorker", "is not supported by caldera yet (its TF_CONFIG is the full cluster)")
    if fw.kind == "TFJob":
        r.choice(spec, "successPolicy", "spec", ("", "AllWorkers"), "")
    if fw.kind == "MPIJob":
        r.choice(spec, "cleanPodPolicy", "spec", _CLEAN_POD_POLICIES, "None")
        r.string(spec, "mainContainer", "spec")


def _present_types(manifest: Mapping[str, Any], fw: Framework) -> list[str]:
    raw = (manifest.get("spec") or {}).get(fw.specs) or {}
    given = {str(k).lower(): str(k) for k in raw} if isinstance(raw, Mapping) else {}
    return [t for t in fw.types if t.lower() in given]


def _replica_specs(r: FieldReader, spec: Doc, fw: Framework) -> list[tuple[str, object]]:
    """(canonical replica type, its spec) in task order; type names are read in any case, as the operator does."""
    path = child("spec", fw.specs)
    raw = r.sub(spec, fw.specs, "spec")
    if raw is None:
        if spec.get(fw.specs) is None:
            r.error(path, "is required")
        return []
    canonical = {t.lower(): t for t in fw.types}
    found: dict[str, object] = {}
    for key, value in raw.items():
        rtype = canonical.get(key.lower())
        if rtype is None:
            r.error(child(path, key), f"unknown replica type; a {fw.kind} has {', '.join(fw.types)}")
        elif rtype in found:
            r.error(child(path, key), f"{rtype} is given twice (replica types are read in any case)")
        else:
            found[rtype] = value
    if not found:
        r.error(path, f"must have at least one of {', '.join(fw.types)}")
    if fw.kind == "MPIJob" and "Launcher" not in found:
        r.error(child(path, "Launcher"), "is required: the launcher runs mpirun")
    if fw.kind == "TFJob" and "Chief" in found and "Master" in found:
        r.error(path, "has both a Chief and a Master: a TFJob has at most one chief")
    return [(t, found[t]) for t in fw.types if t in found]


def _task(r: FieldReader, fw: Framework, rtype: str, raw: object, spec: Doc, backoff: int | None) -> dict[str, Any]:
    path = child(child("spec", fw.specs), rtype)
    doc = r.mapping(raw, path) or {}
    if raw is None:
        r.error(path, "must be a mapping, not null")
    r.known(doc, path, _REPLICA)
    replicas = _non_negative(r, doc, "replicas", path)
    if replicas is None:
        replicas = 0 if (fw.kind, rtype) == ("MPIJob", "Worker") else 1
    one = {("PyTorchJob", "Master"), ("MPIJob", "Launcher"), ("TFJob", "Chief"), ("TFJob", "Master")}
    if (fw.kind, rtype) in one and replicas != 1:
        r.error(child(path, "replicas"), f"must be 1: a {fw.kind} has one {rtype}")
    restart = r.choice(doc, "restartPolicy", path, _RESTART_POLICIES, fw.restart)
    template = _template(r, fw, rtype, doc.get("template"), child(path, "template"), spec)
    template["spec"]["restartPolicy"], policies = _lifecycle(restart, backoff)
    task: dict[str, Any] = {"name": rtype.lower(), "replicas": replicas}
    if rtype == _chief(fw, spec):
        policies.append({"event": "TaskCompleted", "action": "CompleteJob"})
    if policies:
        task["policies"] = policies
    task["template"] = template
    return task


def _chief(fw: Framework, spec: Doc) -> str | None:
    raw = spec.get(fw.specs)
    present = {str(k).lower() for k in raw} if isinstance(raw, Mapping) else set()
    return next((t for t in fw.chiefs if t.lower() in present), None)


def _lifecycle(restart: str, backoff: int | None) -> tuple[str, list[dict[str, Any]]]:
    """The pods' restartPolicy and the task's policies for a replica's restart policy (see the module docstring)."""
    end = {"event": "PodFailed", "action": "TerminateJob"}
    if restart == "ExitCode":
        return "Never", [*({"exitCode": c, "action": "RestartPod"} for c in RETRYABLE_EXIT_CODES), end]
    if restart == "Never" or backoff == 0:
        return "Never", [end]
    if backoff is not None:
        return "Never", [{"event": "PodFailed", "action": "RestartJob"}]
    return restart, []


def _template(r: FieldReader, fw: Framework, rtype: str, raw: object, path: str, spec: Doc) -> dict[str, Any]:
    doc = r.mapping(raw, path)
    if doc is None:
        r.error(path, f"is required: the pods of the {rtype} replicas")
        return {"spec": {"containers": []}}
    template = copy.deepcopy(dict(doc))
    pod = template.get("spec")
    containers = pod.get("containers") if isinstance(pod, Mapping) else None
    if not isinstance(pod, dict) or not isinstance(containers, list) or not containers:
        r.error(child(path, "spec.containers"), f"must list the {rtype} replica's containers")
        return {"spec": {"containers": []}}
    wanted = fw.container or r.string(spec, "mainContainer", "spec")
    names = [c.get("name") if isinstance(c, Mapping) else None for c in containers]
    if wanted and wanted not in names:
        r.error(child(path, "spec.containers"), f'must have a container named "{wanted}"')
        return {"spec": {"containers": []}}
    main = containers.pop(names.index(wanted) if wanted else 0)
    if not isinstance(main, dict):
        r.error(child(path, "spec.containers"), f"a container must be a mapping, not {describe(main)}")
        return {"spec": {"containers": []}}
    if fw.port_name and not any(
        isinstance(p, Mapping) and p.get("name") == fw.port_name for p in main.get("ports") or []
    ):
        main["ports"] = [*(main.get("ports") or []), {"name": fw.port_name, "containerPort": fw.port}]
    if (fw.kind, rtype) == ("MPIJob", "Worker") and not main.get("command"):
        main["command"], main["args"] = ["sleep"], ["365d"]  # as the operator: the launcher's mpirun does the work
    pod["containers"] = [main, *containers]  # caldera runs the first container of a pod
    meta = template.setdefault("metadata", {})
    labels = meta.setdefault("labels", {}) if isinstance(meta, dict) else None
    if isinstance(labels, dict):
        labels["training.kubeflow.org/replica-type"] = rtype.lower()  # as the operator labels its pods
    return template


def _plugin_flags(r: FieldReader, spec: Doc, fw: Framework) -> list[str]:
    flags = [f"--kind={fw.kind}"]
    if fw.kind == "PyTorchJob":
        nproc = r.string(spec, "nprocPerNode", "spec", "auto")
        if nproc not in ("auto", "cpu", "gpu") and not (nproc.isdigit() and int(nproc) > 0):
            r.error("spec.nprocPerNode", f"{nproc!r} is not auto, cpu, gpu or a number of processes")
        flags.append(f"--nproc-per-node={nproc}")
    if fw.kind == "MPIJob":
        slots = r.integer(spec, "slotsPerWorker", "spec")
        if slots is not None and slots < 1:
            r.error("spec.slotsPerWorker", "must be at least 1")
        flags.append(f"--slots={slots or 1}")
    return flags


def _non_negative(r: FieldReader, doc: Doc, key: str, path: str) -> int | None:
    value = r.integer(doc, key, path)
    if value is not None and value < 0:
        r.error(child(path, key), "must be at least 0")
        return None
    return value


def kubeflow_error(e: ValidationError, manifest: Mapping[str, Any]) -> ValidationError:
    """`e`, raised on the Volcano Job `to_volcano` made, with the paths of the Kubeflow manifest."""
    errors = [FieldError(volcano_path(f.path, manifest), f.rule) for f in e.errors]
    return ValidationError(errors, e.source)
