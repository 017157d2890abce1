"""`caldera kube manifests`: its output applies with `kubectl apply --server-side` on a real control plane,
and the controller's ServiceAccount may do what the controller does and nothing more."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from caldera.backends.kube.client import resource_path

pytestmark = pytest.mark.kube


def manifests(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "caldera.cli.main", "kube", "manifests", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


def can(plane, namespace: str, verb: str, resource: str, where: str | None = None) -> bool:
    resource, _, sub = resource.partition("/")
    args = ["auth", "can-i", verb, resource, f"--as=system:serviceaccount:{namespace}:caldera"]
    args += [f"--subresource={sub}"] if sub else []
    args += ["-n", where] if where else ["--all-namespaces"]
    return plane.kubectl(*args).stdout.strip() == "yes"


def test_manifests_apply_server_side_and_grant_only_what_the_controller_does(plane):
    text = manifests("--namespace", "caldera-test", "--image", "registry.example/caldera:1", "--with-etcd")
    kinds = [d["kind"] for d in yaml.safe_load_all(text)]
    assert kinds[0] == "Namespace" and kinds.count("CustomResourceDefinition") == 4
    applied = plane.kubectl("apply", "--server-side", "-f", "-", input=text)
    assert applied.returncode == 0, applied.stderr
    assert "deployment.apps/caldera-controller serverside-applied" in applied.stdout

    deployment = plane.kube.get(
        resource_path("apps/v1", "deployments", namespace="caldera-test", name="caldera-controller")
    )
    assert deployment["spec"]["replicas"] == 2
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example/caldera:1"
    assert container["args"] == [
        "controller", "--scheduler-name", "caldera", "--elastic-server", "caldera-etcd.caldera-test.svc:2379"
    ]  # fmt: skip
    assert plane.kube.get(resource_path("v1", "services", namespace="caldera-test", name="caldera-etcd"))

    allowed = [
        ("create", "pods"), ("delete", "pods"), ("watch", "pods"), ("create", "pods/binding"), ("get", "pods/status"),
        ("create", "events"), ("create", "services"), ("create", "configmaps"), ("create", "secrets"),
        ("watch", "nodes"), ("list", "priorityclasses.scheduling.k8s.io"),
        ("update", "jobs.batch.volcano.sh"), ("patch", "jobs.batch.volcano.sh/status"),
        ("create", "podgroups.scheduling.volcano.sh"), ("update", "queues.scheduling.volcano.sh/status"),
        ("delete", "commands.bus.volcano.sh"),
    ]  # fmt: skip
    for verb, resource in allowed:
        assert can(plane, "caldera-test", verb, resource), f"the controller may not {verb} {resource}"
    assert can(plane, "caldera-test", "update", "leases.coordination.k8s.io", "caldera-test")
    denied = [
        ("update", "nodes"), ("delete", "nodes"), ("update", "pods"), ("create", "deployments.apps"),
        ("create", "jobs.batch.volcano.sh"), ("delete", "jobs.batch.volcano.sh"), ("create", "commands.bus.volcano.sh"),
        ("create", "customresourcedefinitions.apiextensions.k8s.io"), ("create", "clusterroles.rbac.authorization.k8s.io"),
    ]  # fmt: skip
    for verb, resource in denied:
        assert not can(plane, "caldera-test", verb, resource), f"the controller may {verb} {resource}"
    # Leases only in its own namespace.
    assert not can(plane, "caldera-test", "update", "leases.coordination.k8s.io", "default")

    again = plane.kubectl("apply", "--server-side", "-f", "-", input=text)  # idempotent
    assert again.returncode == 0, again.stderr
    plane.kube.delete("/api/v1/namespaces/caldera-test")


def test_crds_only_and_bad_options():
    docs = list(yaml.safe_load_all(manifests("--crds-only")))
    assert [d["metadata"]["name"] for d in docs] == [
        "queues.scheduling.volcano.sh",
        "podgroups.scheduling.volcano.sh",
        "jobs.batch.volcano.sh",
        "commands.bus.volcano.sh",
    ]
    bad = subprocess.run(
        [sys.executable, "-m", "caldera.cli.main", "kube", "manifests", "--namespace", "Caldera_System"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2 and "--namespace" in bad.stderr and "Traceback" not in bad.stderr
