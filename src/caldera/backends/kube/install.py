"""What `caldera kube manifests` prints: everything a cluster needs to run caldera in place of Volcano.

`install_manifests(namespace, image, with_etcd)` is, in apply order: the namespace, caldera's CRDs
(`crds.py`), a ServiceAccount, a ClusterRole granting only what the controller does (`CONTROLLER_RULES`)
and its binding, a Role for the leader-election Lease in its own namespace and its binding, a
Deployment of 2 replicas running `caldera controller` (one leads, the other waits on the Lease) and,
with `with_etcd`, an etcd for elastic jobs (a Deployment and a Service, its data in memory: the
rendezvous state lives as long as the jobs that use it) with the controller told where it is.

Invariant: only dicts are built here (no I/O); every object is labelled `app.kubernetes.io/part-of: caldera`.
"""

from __future__ import annotations

from typing import Any

from caldera.backends.kube.crds import BUS_API, crds
from caldera.core.objects import JOB_API, SCHEDULING_API

JSON = dict[str, Any]

NAME = "caldera"
DEFAULT_NAMESPACE = "caldera-system"
DEFAULT_IMAGE = "ghcr.io/caldera-dev/caldera:latest"
ETCD_IMAGE = "registry.k8s.io/etcd:3.5.21-0"
ETCD_PORT = 2379
PART_OF = {"app.kubernetes.io/part-of": NAME}
BATCH, SCHEDULING, BUS = (api.split("/")[0] for api in (JOB_API, SCHEDULING_API, BUS_API))
WATCH = ["get", "list", "watch"]

# (API groups, resources, verbs): what the controller reads and writes, and nothing more.
CONTROLLER_RULES: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    # Its pods: created (bound or not), bound, deleted with their grace period; their status is read.
    (("",), ("pods",), ("create", "delete", "get", "list", "watch")),
    (("",), ("pods/binding",), ("create",)),
    (("",), ("pods/status",), ("get",)),
    # `kubectl describe` tells the story: Scheduled, FailedScheduling, Preempted, job phases.
    (("",), ("events",), ("create", "patch")),
    (("events.k8s.io",), ("events",), ("create", "patch")),
    # The svc plugin's headless Service and hosts ConfigMap, the ssh plugin's key Secret.
    (("",), ("services", "configmaps", "secrets"), ("create", "delete", "get", "list", "watch", "update")),
    # Where pods can go, and what other schedulers' pods hold there.
    (("",), ("nodes",), ("get", "list", "watch")),
    (("scheduling.k8s.io",), ("priorityclasses",), ("get", "list", "watch")),
    # Volcano's API: Jobs read and defaulted, their status written; PodGroups owned; Queues' status written;
    # Commands consumed (deleted once acted on).
    ((BATCH,), ("jobs",), ("get", "list", "watch", "update", "patch")),
    ((BATCH,), ("jobs/status",), ("get", "update", "patch")),
    ((SCHEDULING,), ("podgroups",), ("create", "delete", "get", "list", "watch", "update", "patch")),
    ((SCHEDULING,), ("podgroups/status",), ("get", "update", "patch")),
    ((SCHEDULING,), ("queues",), ("create", "get", "list", "watch", "update", "patch")),
    ((SCHEDULING,), ("queues/status",), ("get", "update", "patch")),
    ((BUS,), ("commands",), ("get", "list", "watch", "delete")),
)
# Leader election, in the controller's own namespace only.
LEASE_RULES = ((("coordination.k8s.io",), ("leases",), ("create", "get", "list", "watch", "update")),)


def _meta(name: str, namespace: str | None = None, labels: JSON | None = None) -> JSON:
    out: JSON = {"name": name, "labels": {**PART_OF, **(labels or {})}}
    if namespace is not None:
        out["namespace"] = namespace
    return out


def _rules(rules: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...]) -> list[JSON]:
    return [{"apiGroups": list(g), "resources": list(r), "verbs": list(v)} for g, r, v in rules]


def _binding(kind: str, name: str, namespace: str) -> JSON:
    scoped = kind == "RoleBinding"
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": _meta(name, namespace if scoped else None),
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role" if scoped else "ClusterRole",
            "name": name,
        },
        "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
    }


def rbac(namespace: str) -> list[JSON]:
    """The ServiceAccount, its ClusterRole and Role (leases), and their bindings."""
    rbac_api = "rbac.authorization.k8s.io/v1"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, namespace)},
        {
            "apiVersion": rbac_api,
            "kind": "ClusterRole",
            "metadata": _meta(f"{NAME}-controller"),
            "rules": _rules(CONTROLLER_RULES),
        },
        _binding("ClusterRoleBinding", f"{NAME}-controller", namespace),
        {
            "apiVersion": rbac_api,
            "kind": "Role",
            "metadata": _meta(f"{NAME}-leader-election", namespace),
            "rules": _rules(LEASE_RULES),
        },
        _binding("RoleBinding", f"{NAME}-leader-election", namespace),
    ]


def controller(namespace: str, image: str, elastic_server: str | None = None, replicas: int = 2) -> JSON:
    """The Deployment of `caldera controller`: `replicas` pods, one leading at a time (a Lease)."""
    labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "controller"}
    args = ["controller", "--scheduler-name", NAME]
    if elastic_server:
        args += ["--elastic-server", elastic_server]
    field = [("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace")]
    container: JSON = {
        "name": "controller",
        "image": image,
        "command": ["caldera"],
        "args": args,
        # The Lease holder's identity and namespace (the downward API).
        "env": [{"name": n, "valueFrom": {"fieldRef": {"fieldPath": p}}} for n, p in field],
        "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        # A writable /tmp on the read-only root: the ssh plugin generates each job's key pair there.
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    pod_spec: JSON = {
        "serviceAccountName": NAME,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": [{"name": "tmp", "emptyDir": {}}],
        # Two replicas on two nodes, where there are two: one node's loss never stops scheduling.
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": labels},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(f"{NAME}-controller", namespace, labels),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": {**PART_OF, **labels}}, "spec": pod_spec},
        },
    }


def etcd(namespace: str, image: str = ETCD_IMAGE) -> list[JSON]:
    """One etcd member for elastic jobs' rendezvous (`--elastic-server`), and its Service."""
    labels = {"app.kubernetes.io/name": f"{NAME}-etcd", "app.kubernetes.io/component": "elastic-server"}
    url = f"http://0.0.0.0:{ETCD_PORT}"
    container = {
        "name": "etcd",
        "image": image,
        "command": [
            "etcd",
            "--data-dir=/var/lib/etcd",
            f"--listen-client-urls={url}",
            f"--advertise-client-urls=http://{NAME}-etcd.{namespace}.svc:{ETCD_PORT}",
            "--listen-peer-urls=http://127.0.0.1:2380",
        ],
        "ports": [{"name": "client", "containerPort": ETCD_PORT}],
        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/etcd"}],
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(f"{NAME}-etcd", namespace, labels),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": {**PART_OF, **labels}},
                "spec": {"containers": [container], "volumes": [{"name": "data", "emptyDir": {"medium": "Memory"}}]},
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(f"{NAME}-etcd", namespace, labels),
        "spec": {"selector": labels, "ports": [{"name": "client", "port": ETCD_PORT, "targetPort": ETCD_PORT}]},
    }
    return [deployment, service]


def install_manifests(
    namespace: str = DEFAULT_NAMESPACE, image: str = DEFAULT_IMAGE, *, with_etcd: bool = False
) -> list[JSON]:
    """Every object of an installation, in apply order (see the module docstring)."""
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(namespace)}
    elastic = f"{NAME}-etcd.{namespace}.svc:{ETCD_PORT}" if with_etcd else None
    return [
        ns,
        *crds(),
        *rbac(namespace),
        *(etcd(namespace) if with_etcd else []),
        controller(namespace, image, elastic),
    ]
