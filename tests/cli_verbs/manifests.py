"""Manifests the verb tests apply, as YAML text and as dicts."""

from __future__ import annotations

import yaml


def job(
    name: str = "train", *, workers: int = 2, gpus: int = 1, queue: str | None = None, namespace: str | None = None
) -> dict[str, object]:
    def task(task_name: str, replicas: int) -> dict[str, object]:
        requests = {"cpu": "500m", "memory": "1Gi", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
        container = {
            "name": "main",
            "image": "none",
            "command": ["python", "train.py"],
            "resources": {"requests": requests},
        }
        return {"name": task_name, "replicas": replicas, "template": {"spec": {"containers": [container]}}}

    meta: dict[str, str] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    spec: dict[str, object] = {"tasks": [task("master", 1), task("worker", workers)]}
    if queue:
        spec["queue"] = queue
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": meta, "spec": spec}


def queue(name: str, **spec: object) -> dict[str, object]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def to_yaml(*docs: dict[str, object]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)
