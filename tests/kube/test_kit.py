"""The test control plane itself: fake nodes, the pod lifecycle KWOK plays, the controller manager, kubectl,
and a teardown that leaves nothing behind."""

from __future__ import annotations

import itertools
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from caldera.backends.kube.client import JSON, NotFound, resource_path
from caldera.testing.kube import (
    DURATION_ANNOTATION,
    FakeNode,
    add_nodes,
    delete_nodes,
    find_tools,
    run_for,
    running_cluster,
)
from caldera.testing.waiting import wait_until

pytestmark = pytest.mark.kube


def bound_pod(name: str, node: str, annotations: dict[str, str] | None = None, gpus: int = 0) -> JSON:
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "nodeName": node,  # created bound: no scheduler needed here
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "trainer:1", "resources": resources}],
        },
    }


def phase(plane, namespace: str, name: str) -> str | None:
    try:
        return plane.kube.get(resource_path("v1", "pods", namespace=namespace, name=name))["status"].get("phase")
    except NotFound:
        return None


_tests = itertools.count()


@pytest.fixture
def nodes(plane):
    """Two fake nodes of this test (removed afterwards)."""
    prefix = f"kit-{next(_tests)}"
    made = [
        FakeNode(f"{prefix}-0", cpu="8", memory="64Gi", gpus=2, labels={"test": prefix}),
        FakeNode(f"{prefix}-1", taints=({"key": "dedicated", "value": "x", "effect": "NoSchedule"},)),
    ]
    add_nodes(plane, made)
    yield [n.name for n in made]
    delete_nodes(plane, [n.name for n in made])


def test_fake_nodes_are_ready_with_their_capacity_labels_and_taints(plane, nodes):
    first = plane.kube.get(resource_path("v1", "nodes", name=nodes[0]))
    assert first["status"]["allocatable"] == {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2", "pods": "110"}
    assert first["status"]["capacity"] == first["status"]["allocatable"]
    assert first["metadata"]["labels"]["test"] == nodes[0].removesuffix("-0")
    assert first["spec"].get("taints") is None  # TaintNodesByCondition is off: no not-ready taint
    ready = [c for c in first["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "True"
    second = plane.kube.get(resource_path("v1", "nodes", name=nodes[1]))
    assert second["spec"]["taints"] == [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]


def test_a_bound_pod_runs_until_deleted(plane, namespace, nodes):
    pods = resource_path("v1", "pods", namespace=namespace)
    plane.kube.create(pods, bound_pod("forever", nodes[0], gpus=1))
    wait_until(lambda: phase(plane, namespace, "forever") == "Running", 60, "the pod to run")
    running = plane.kube.get(f"{pods}/forever")
    assert running["status"]["podIP"].startswith("127.")
    assert running["status"]["containerStatuses"][0]["state"]["running"]
    plane.kube.delete(f"{pods}/forever")
    wait_until(lambda: phase(plane, namespace, "forever") is None, 60, "the deleted pod to be removed")


@pytest.mark.parametrize(("code", "expected"), [(0, "Succeeded"), (3, "Failed")])
def test_a_pod_runs_for_its_duration_then_ends_with_its_exit_code(plane, namespace, nodes, code, expected):
    pods = resource_path("v1", "pods", namespace=namespace)
    plane.kube.create(pods, bound_pod("timed", nodes[0], run_for(1.5, code)))
    wait_until(lambda: phase(plane, namespace, "timed") == expected, 60, f"the pod to end {expected}")
    done = plane.kube.get(f"{pods}/timed")
    terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == code
    started = _time(done["status"]["startTime"])
    finished = _time(terminated["finishedAt"])
    assert finished - started >= 1  # seconds resolution: it ran (about) its 1.5 s, not 0


def test_run_for_rejects_what_kwok_could_not_play():
    assert run_for(0.25) == {DURATION_ANNOTATION: "250ms", "caldera.dev/kwok-exit-code": "0"}
    with pytest.raises(ValueError, match="finite time"):
        run_for(-1)
    with pytest.raises(ValueError, match="exit code"):
        run_for(1, 256)


def test_the_garbage_collector_deletes_what_an_owner_owned(plane, namespace, nodes):
    maps = resource_path("v1", "configmaps", namespace=namespace)
    owner = plane.kube.create(maps, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    pod = bound_pod("owned", nodes[0])
    pod["metadata"]["ownerReferences"] = [reference]
    pods = resource_path("v1", "pods", namespace=namespace)
    plane.kube.create(pods, pod)
    plane.kube.delete(f"{maps}/owner", propagation_policy="Background")
    wait_until(lambda: phase(plane, namespace, "owned") is None, 60, "the owned pod to be collected")


def test_kubectl_applies_server_side(plane, namespace):
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "k", "namespace": namespace}}
    done = plane.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(manifest))
    assert done.returncode == 0, done.stderr
    assert "serverside-applied" in done.stdout
    assert plane.kube.get(resource_path("v1", "configmaps", namespace=namespace, name="k"))["metadata"]["uid"]


def test_a_control_plane_leaves_nothing_behind_even_when_the_test_fails():
    tools = find_tools()
    seen: dict[str, Any] = {}
    with pytest.raises(RuntimeError, match="the test failed"), running_cluster(tools=tools) as plane:
        seen["directory"] = plane.directory
        seen["pids"] = {name: p.pid for name, p in plane.processes.items()}
        assert plane.etcd is not None
        seen["etcd_dir"] = plane.etcd.data_dir.parent
        assert plane.kube.get_text("/readyz") == "ok"
        raise RuntimeError("the test failed")
    assert set(seen["pids"]) == {"etcd", "kube-apiserver", "kube-controller-manager", "kwok"}
    for name, pid in seen["pids"].items():
        assert not _alive(pid), f"{name} (pid {pid}) still runs"
    assert not Path(seen["directory"]).exists()
    assert not Path(seen["etcd_dir"]).exists()


def _alive(pid: object) -> bool:
    assert isinstance(pid, int)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


def _time(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
