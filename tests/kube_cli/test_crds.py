"""caldera's CRDs on a real kube-apiserver: they install, Volcano's own examples are accepted unchanged,
and what Volcano's admission webhook refuses is refused by the API server itself, naming the field path."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from caldera.backends.kube.client import JSON, ApiError, resource_path
from caldera.backends.kube.crds import crds
from caldera.core.manifest import parse_job

pytestmark = pytest.mark.kube

FIXTURES = Path(__file__).parent.parent / "fixtures"
EXAMPLES = {
    "job.yaml": FIXTURES / "volcano" / "job.yaml",
    "mpi": FIXTURES / "volcano" / "mpi-example.yaml",
    "tf-dist-mnist": FIXTURES / "volcano" / "tf-dist-mnist-example.yaml",
    "paddle-ctr": FIXTURES / "ctr-volcano.yaml",
}


def jobs(namespace: str) -> str:
    return resource_path("batch.volcano.sh/v1alpha1", "jobs", namespace=namespace)


def example(name: str) -> JSON:
    return yaml.safe_load(EXAMPLES[name].read_text())


def test_the_crds_are_volcanos_groups_versions_and_shapes(plane):
    served = {}
    for crd in crds():
        stored = plane.kube.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}")
        (version,) = stored["spec"]["versions"]
        served[stored["metadata"]["name"]] = (version["name"], stored["spec"]["scope"], version.get("subresources"))
        accepted = {c["type"]: c["status"] for c in stored["status"]["conditions"]}
        assert accepted.get("NamesAccepted") == "True" and accepted.get("Established") == "True"
        assert accepted.get("NonStructuralSchema") is None, "every schema is structural"
    assert served == {
        "jobs.batch.volcano.sh": ("v1alpha1", "Namespaced", {"status": {}}),
        "podgroups.scheduling.volcano.sh": ("v1beta1", "Namespaced", None),
        "queues.scheduling.volcano.sh": ("v1beta1", "Cluster", {"status": {}}),
        "commands.bus.volcano.sh": ("v1alpha1", "Namespaced", None),
    }


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_volcanos_examples_are_accepted_unchanged(plane, namespace, name):
    manifest = example(name)
    parse_job(manifest)  # caldera reads it too
    stored = plane.kube.create(jobs(namespace), manifest)
    assert stored["spec"]["tasks"] == manifest["spec"]["tasks"], "nothing in the tasks was pruned"
    assert stored["spec"]["queue"] == "default"  # the schema's default, as Volcano's webhook's
    assert stored["spec"]["maxRetry"] == manifest["spec"].get("maxRetry", 3)
    # kubectl reads it through the CRD's printer columns.
    out = plane.kubectl("get", "vcjob", "-n", namespace, "-o", "name").stdout
    assert f"job.batch.volcano.sh/{manifest['metadata']['name']}" in out


def _job(**spec: object) -> JSON:
    task = {"name": "worker", "replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "img:1"}]}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "bad"},
        "spec": {"minAvailable": 2, "tasks": [task], **spec},
    }


def _with(change: Callable[[JSON], None], **spec: object) -> JSON:
    job = _job(**spec)
    change(job)
    return job


def _task(job: JSON, **fields: object) -> None:
    job["spec"]["tasks"][0].update(fields)


def _second_task(job: JSON, **fields: object) -> None:
    job["spec"]["tasks"].append({**copy.deepcopy(job["spec"]["tasks"][0]), **fields})


# (manifest, the field path the API server names, a piece of the rule it states)
INVALID = {
    "minAvailable over the replicas": (_job(minAvailable=3), "spec.minAvailable", "replicas of all tasks"),
    "minSuccess over the replicas": (_job(minSuccess=5), "spec.minSuccess", "replicas of all tasks"),
    "duplicate task name": (_with(_second_task), "spec.tasks", "task names must be unique"),
    "task minAvailable over replicas": (
        _with(lambda j: _task(j, minAvailable=3)),
        "spec.tasks[0].minAvailable",
        "task's replicas",
    ),
    "duplicate policy event": (
        _job(policies=[{"event": "PodFailed", "action": "RestartJob"}, {"event": "PodFailed", "action": "AbortJob"}]),
        "spec.policies",
        "each event is handled by one policy",
    ),
    "duplicate event across event and events": (
        _with(
            lambda j: _task(
                j,
                policies=[
                    {"events": ["PodEvicted", "PodFailed"], "action": "RestartJob"},
                    {"event": "PodFailed", "action": "AbortJob"},
                ],
            )
        ),
        "spec.tasks[0].policies",
        "each event is handled by one policy",
    ),
    "duplicate exit code": (
        _job(policies=[{"exitCode": 3, "action": "RestartJob"}, {"exitCode": 3, "action": "AbortJob"}]),
        "spec.policies",
        "each exit code",
    ),
    "star beside another event": (
        _job(policies=[{"event": "*", "action": "RestartJob"}, {"event": "PodFailed", "action": "AbortJob"}]),
        "spec.policies",
        '"*" matches every event',
    ),
    "unknown event": (
        _job(policies=[{"event": "PodExploded", "action": "RestartJob"}]),
        "spec.policies[0].event",
        "supported values",
    ),
    "unknown action": (
        _job(policies=[{"event": "PodFailed", "action": "Reboot"}]),
        "spec.policies[0].action",
        "supported values",
    ),
    "exit code 0": (_job(policies=[{"exitCode": 0, "action": "RestartJob"}]), "spec.policies[0].exitCode", "success"),
    "event and exit code together": (
        _job(policies=[{"event": "PodFailed", "exitCode": 2, "action": "RestartJob"}]),
        "spec.policies[0]",
        "both an event and an exitCode",
    ),
    "a policy with nothing to match": (
        _job(policies=[{"action": "RestartJob"}]),
        "spec.policies[0]",
        "event, events or an exitCode",
    ),
    "job-wide event with a task action": (
        _job(policies=[{"event": "JobUpdated", "action": "RestartTask"}]),
        "spec.policies[0].action",
        "raised for the whole job",
    ),
    "unknown plugin": (_job(plugins={"horovod": []}), "spec.plugins", "unknown job plugin"),
    "volumes, which caldera does not implement": (
        _job(volumes=[{"mountPath": "/data"}]),
        "spec.volumes",
        "not supported by caldera",
    ),
    "dependsOn an unknown task": (
        _with(lambda j: _task(j, dependsOn={"name": ["ps"]})),
        "spec.tasks",
        "dependsOn must name tasks",
    ),
    "dependsOn itself": (
        _with(lambda j: _task(j, dependsOn={"name": ["worker"]})),
        "spec.tasks[0].dependsOn",
        "depend on itself",
    ),
    "negative replicas": (_with(lambda j: _task(j, replicas=-1)), "spec.tasks[0].replicas", "greater than or equal"),
    "no replicas": (_with(lambda j: j["spec"]["tasks"][0].pop("replicas")), "spec.tasks[0].replicas", "Required"),
    "task name not a DNS label": (_with(lambda j: _task(j, name="Worker_1")), "spec.tasks[0].name", "should match"),
    "no tasks": (_job(tasks=[], minAvailable=0), "spec.tasks", "at least 1"),
    "no image": (
        _with(lambda j: j["spec"]["tasks"][0]["template"]["spec"]["containers"][0].pop("image")),
        "spec.tasks[0].template.spec.containers[0].image",
        "Required",
    ),
    "pod names over 63 characters": (
        _with(lambda j: _task(j, name="w" * 60)),
        "spec.tasks",
        "longer than 63 characters",
    ),
    "job name not a DNS label": (
        _with(lambda j: j["metadata"].update(name="my.job")),
        "<nil>",
        "DNS-1123 label",
    ),
    "a timeout that is no duration": (
        _job(policies=[{"event": "PodFailed", "action": "RestartJob", "timeout": "ten minutes"}]),
        "spec.policies[0].timeout",
        "should match",
    ),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_what_the_webhook_refuses_the_api_server_refuses_naming_the_field(plane, namespace, case):
    manifest, path, rule = INVALID[case]
    with pytest.raises(ApiError) as refused:
        plane.kube.create(jobs(namespace), manifest)
    assert refused.value.code == 422, refused.value
    causes = refused.value.details.get("causes") or []
    named = [c for c in causes if (c.get("field") or "<nil>") == path]
    assert named, f"no cause at {path}: {causes}"
    assert any(rule in c.get("message", "") for c in named), causes


def test_queue_and_command_rules(plane):
    queues = resource_path("scheduling.volcano.sh/v1beta1", "queues")
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q-rules"}}
    for spec, path in (
        ({"weight": 0}, "spec.weight"),
        ({"weight": 70000}, "spec.weight"),
        ({"parent": "q-rules"}, "spec.parent"),
    ):
        with pytest.raises(ApiError) as refused:
            plane.kube.create(queues, {**queue, "spec": spec})
        assert [c["field"] for c in refused.value.details["causes"]] == [path]
    stored = plane.kube.create(
        queues, {**queue, "spec": {"weight": 2, "capability": {"cpu": "8", "nvidia.com/gpu": 2}}}
    )
    assert stored["spec"]["capability"] == {"cpu": "8", "nvidia.com/gpu": 2}
    # Status is a subresource: written there, ignored in the object.
    stored["status"] = {"state": "Closed", "allocated": {}}
    plane.kube.replace(f"{queues}/q-rules/status", stored)
    assert plane.kube.get(f"{queues}/q-rules")["status"]["state"] == "Closed"
    plane.kube.delete(f"{queues}/q-rules")
    commands = resource_path("bus.volcano.sh/v1alpha1", "commands", namespace="default")
    with pytest.raises(ApiError) as refused:
        plane.kube.create(commands, {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
                                     "metadata": {"generateName": "x-"}, "action": "Explode"})  # fmt: skip
    assert refused.value.details["causes"][0]["field"] == "action"


def test_job_status_is_a_subresource_in_volcanos_shape(plane, namespace):
    made = plane.kube.create(jobs(namespace), example("mpi"))
    status = {
        "state": {"phase": "Running", "reason": "", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
        "minAvailable": 3,
        "running": 3,
        "retryCount": 1,
        "taskStatusCount": {"mpiworker": {"phase": {"Running": 2}}},
        "conditions": [{"status": "Running", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "controlledResources": {"caldera.dev/start-time": "2026-01-01T00:00:00Z"},
    }
    plane.kube.replace(f"{jobs(namespace)}/lm-mpi-job/status", {**made, "status": status})
    assert plane.kube.get(f"{jobs(namespace)}/lm-mpi-job")["status"] == status
    with pytest.raises(ApiError) as refused:
        plane.kube.replace(
            f"{jobs(namespace)}/lm-mpi-job/status",
            {**plane.kube.get(f"{jobs(namespace)}/lm-mpi-job"), "status": {"state": {"phase": "Exploded"}}},
        )
    assert refused.value.details["causes"][0]["field"] == "status.state.phase"
