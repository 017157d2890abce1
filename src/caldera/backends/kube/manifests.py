"""The Kubernetes objects caldera's controller creates for a Volcano Job, in Volcano's shapes.

- a Pod from its task's template as the user wrote it (every field kept), with the names,
  labels and annotations the controller rendered (`<job>-<task>-<index>`, `volcano.sh/job-name`,
  `scheduling.k8s.io/group-name`, ...), an ownerReference to its Job, caldera's schedulerName,
  the framework plugins' environment in every container (the plugins' values win, as in
  Volcano), their files from the job's ConfigMap, `hostname`/`subdomain` under the `svc`
  plugin (so `<pod>.<job>` resolves), the ssh Secret under `ssh`; and `nodeName` when the
  placement was decided before the pod was created (created bound: one call instead of two);
- a Binding for a pod created before its placement was decided;
- the `svc` plugin's headless Service `<job>` and ConfigMap `<job>-svc`; the `ssh` plugin's
  Secret `<job>-ssh` (a key pair, `authorized_keys` and an ssh `config`).

Invariant: pure functions (the key pair is an argument), so a pod rendered twice is the same.
"""

from __future__ import annotations

import copy
import posixpath
import re
from collections.abc import Mapping
from typing import Any

from caldera.backends.kube.convert import owner_reference
from caldera.core import objects as o

JSON = dict[str, Any]
FILES_VOLUME = "caldera-files"
SSH_VOLUME = "caldera-ssh"
SSH_DIR = "/root/.ssh"
VOLCANO_FILES_DIR = "etc/volcano"  # the svc plugin's directory: its ConfigMap keys are the bare file names


def config_map_name(job: str) -> str:
    return f"{job}-svc"


def ssh_secret_name(job: str) -> str:
    return f"{job}-ssh"


def file_key(path: str) -> str:
    """The ConfigMap key of a plugin file: the name alone under etc/volcano (Volcano's keys), else the path with dots."""
    directory, name = posixpath.split(path)
    if directory == VOLCANO_FILES_DIR:
        return name
    return re.sub(r"[^-._a-zA-Z0-9]", ".", path)


def pod_manifest(
    template: Mapping[str, Any],
    pod: o.Pod,
    *,
    job_uid: str,
    scheduler_name: str,
    node: str = "",
    env: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
    subdomain: str = "",
    ssh: bool = False,
) -> JSON:
    """The Pod for `pod` (rendered by the controller) from its task's `template`."""
    spec: JSON = copy.deepcopy(dict(template.get("spec") or {}))
    spec["schedulerName"] = scheduler_name
    if pod.spec.priority_class_name:
        spec["priorityClassName"] = pod.spec.priority_class_name
    if node:
        spec["nodeName"] = node
    if subdomain:
        spec["hostname"] = pod.name
        spec["subdomain"] = subdomain
    mounts: list[JSON] = []
    volumes: list[JSON] = list(spec.get("volumes") or [])
    if files:
        items: dict[str, list[JSON]] = {}
        for path in sorted(files):
            directory, name = posixpath.split(path)
            items.setdefault(directory, []).append({"key": file_key(path), "path": name})
        for i, (directory, listed) in enumerate(sorted(items.items())):
            volume = f"{FILES_VOLUME}-{i}"
            volumes.append({"name": volume, "configMap": {"name": config_map_name(pod.job), "items": listed}})
            mounts.append({"name": volume, "mountPath": "/" + directory})
    if ssh:
        volumes.append({"name": SSH_VOLUME, "secret": {"secretName": ssh_secret_name(pod.job), "defaultMode": 0o600}})
        mounts.append({"name": SSH_VOLUME, "mountPath": SSH_DIR})
    if volumes:
        spec["volumes"] = volumes
    for field in ("containers", "initContainers"):
        containers = spec.get(field)
        if not containers:
            continue
        spec[field] = [_with_env(c, env or {}, mounts) for c in containers]
    meta = copy.deepcopy(dict(template.get("metadata") or {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            **{
                k: v for k, v in meta.items() if k not in ("name", "namespace", "generateName", "labels", "annotations")
            },
            "name": pod.name,
            "namespace": pod.namespace,
            "labels": dict(pod.metadata.labels),
            "annotations": dict(pod.metadata.annotations),
            "ownerReferences": [owner_reference(pod.job, job_uid)],
        },
        "spec": spec,
    }


def _with_env(container: Mapping[str, Any], env: Mapping[str, str], mounts: list[JSON]) -> JSON:
    out = dict(container)
    own = [e for e in container.get("env") or [] if e.get("name") not in env]
    out["env"] = own + [{"name": k, "value": v} for k, v in sorted(env.items())]
    if mounts:
        taken = {m.get("mountPath") for m in container.get("volumeMounts") or []}
        out["volumeMounts"] = list(container.get("volumeMounts") or []) + [
            m for m in mounts if m["mountPath"] not in taken
        ]
    return out


def binding(pod: str, namespace: str, node: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def headless_service(job: str, namespace: str, job_uid: str, ports: list[int]) -> JSON:
    """The `svc` plugin's Service: no cluster IP, one DNS record per pod (`<pod>.<job>`), not-ready pods too."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": job,
            "namespace": namespace,
            "labels": {o.JOB_NAME_KEY: job},
            "ownerReferences": [owner_reference(job, job_uid)],
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {o.JOB_NAME_KEY: job, o.JOB_NAMESPACE_KEY: namespace},
            "ports": [{"name": f"p{p}", "port": p, "targetPort": p} for p in ports]
            or [{"name": "placeholder", "port": 1}],
        },
    }


def files_config_map(job: str, namespace: str, job_uid: str, files: Mapping[str, str]) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": config_map_name(job),
            "namespace": namespace,
            "labels": {o.JOB_NAME_KEY: job},
            "ownerReferences": [owner_reference(job, job_uid)],
        },
        "data": {file_key(path): content for path, content in sorted(files.items())},
    }


def ssh_secret(job: str, namespace: str, job_uid: str, private_key: str, public_key: str) -> JSON:
    config = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": ssh_secret_name(job),
            "namespace": namespace,
            "labels": {o.JOB_NAME_KEY: job},
            "ownerReferences": [owner_reference(job, job_uid)],
        },
        "type": "Opaque",
        "stringData": {
            "id_rsa": private_key,
            "id_rsa.pub": public_key,
            "authorized_keys": public_key,
            "config": config,
        },
    }
