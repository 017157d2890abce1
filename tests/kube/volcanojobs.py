"""Volcano Jobs on the test control plane, for the tests of `caldera controller`: builders and reads."""

from __future__ import annotations

import json
from collections.abc import Iterator

from caldera.backends.kube.client import JSON, NotFound, resource_path
from caldera.testing.kube import FakeNode, add_nodes, delete_nodes, run_for
from caldera.testing.waiting import wait_until

JOBS = ("batch.volcano.sh/v1alpha1", "jobs")
PODGROUPS = ("scheduling.volcano.sh/v1beta1", "podgroups")
QUEUES = ("scheduling.volcano.sh/v1beta1", "queues")
COMMANDS = ("bus.volcano.sh/v1alpha1", "commands")


def labelled_nodes(plane, request, count: int = 4) -> Iterator[str]:
    """`count` nodes of 8 CPUs and one GPU, labelled for this test only; the label value is yielded."""
    label = request.node.name.replace("_", "-")[:40].strip("-")
    made = [FakeNode(f"{label}-{i}", cpu="8", memory="32Gi", gpus=1, labels={"test": label}) for i in range(count)]
    add_nodes(plane, made)
    yield label
    delete_nodes(plane, [n.name for n in made])


def task(
    name: str,
    replicas: int,
    label: str,
    *,
    seconds: float | None = 2,
    exit_code: int = 0,
    gpus: int = 0,
    **extra: object,
) -> JSON:
    resources: JSON = {"requests": {"cpu": "1", "memory": "1Gi"}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    template: JSON = {
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"test": label},
            "containers": [
                {"name": name, "image": "busybox:1.36", "command": ["sh", "-c", "true"], "resources": resources}
            ],
        }
    }
    if seconds is not None:
        template["metadata"] = {"annotations": run_for(seconds, exit_code)}
    return {"name": name, "replicas": replicas, "template": template, **extra}


def volcano_job(name: str, *tasks: JSON, **spec: object) -> JSON:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"tasks": list(tasks), **spec},
    }


def operator_pod(name: str, label: str, *, group: str = "", gpus: int = 1, cpu: str = "1", **spec: object) -> JSON:
    """A pod as another operator writes it (Kubeflow's, a Deployment's): caldera's schedulerName, `cpu` and `gpus`, the
    PodGroup `group` named in its annotation (none: a pod on its own); `spec` adds to its spec."""
    annotations = {"scheduling.k8s.io/group-name": group} if group else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "schedulerName": "caldera",
            "restartPolicy": "Never",
            "nodeSelector": {"test": label},
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.36",
                    "resources": {"requests": {"cpu": cpu}, "limits": {"nvidia.com/gpu": str(gpus)} if gpus else {}},
                }
            ],
            **spec,
        },
    }


def podgroup(name: str, min_member: int, **spec: object) -> JSON:
    return {
        "apiVersion": PODGROUPS[0],
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member, **spec},
    }


def kubectl_create(plane, namespace: str, obj: JSON) -> None:
    done = plane.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(obj))
    assert done.returncode == 0, done.stderr


def job_phase(plane, namespace: str, name: str) -> str:
    try:
        job = plane.kube.get(resource_path(*JOBS, namespace=namespace, name=name))
    except NotFound:
        return ""
    return str(((job.get("status") or {}).get("state") or {}).get("phase", ""))


def wait_phase(plane, namespace: str, name: str, phase: str, timeout: float = 120) -> JSON:
    wait_until(lambda: job_phase(plane, namespace, name) == phase, timeout, f"job {name} to be {phase}", interval=0.2)
    return plane.kube.get(resource_path(*JOBS, namespace=namespace, name=name))


def pods_of(plane, namespace: str, job: str) -> list[JSON]:
    pods = resource_path("v1", "pods", namespace=namespace)
    return plane.kube.list_all(pods, label_selector=f"volcano.sh/job-name={job}")[0]


def events_of(plane, namespace: str, name: str) -> list[JSON]:
    events = resource_path("v1", "events", namespace=namespace)
    return plane.kube.list_all(events, field_selector=f"involvedObject.name={name}")[0]
