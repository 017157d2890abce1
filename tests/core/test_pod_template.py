"""Reading pod templates: what a pod asks of a node, and Kubernetes' rules on it."""

from __future__ import annotations

from typing import Any

import pytest
from manifest_builders import container_manifest, has_error, job_manifest, messages, task_manifest

from caldera.core.errors import ValidationError
from caldera.core.manifest import parse_job
from caldera.core.objects import (
    Container,
    ContainerPort,
    EnvVar,
    NodeSelectorTerm,
    PodSpec,
    SelectorRequirement,
    Toleration,
)

TEMPLATE = "spec.tasks[0].template.spec"


def pod_of(**pod: Any) -> PodSpec:
    return parse_job(job_manifest(tasks=[task_manifest(pod=pod)])).spec.tasks[0].template.spec


def container_of(**fields: Any) -> Container:
    return pod_of(containers=[container_manifest(**fields)]).containers[0]


def pod_error(**pod: Any) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        parse_job(job_manifest(tasks=[task_manifest(pod=pod)]))
    return info.value


@pytest.mark.parametrize(
    ("resources", "requests"),
    [
        pytest.param({"limits": {"cpu": 2, "memory": "1Gi"}}, {"cpu": 2000.0, "memory": 2.0**30}, id="all-from-limits"),
        pytest.param(
            {"limits": {"cpu": 2, "memory": "1Gi"}, "requests": {"cpu": "500m"}},
            {"cpu": 500.0, "memory": 2.0**30},
            id="per-resource",
        ),
        pytest.param({"requests": {"nvidia.com/gpu": 1}}, {"nvidia.com/gpu": 1000.0}, id="requests-only"),
        pytest.param({}, {}, id="none"),
    ],
)
def test_requests_default_to_limits_per_resource(resources: dict[str, Any], requests: dict[str, float]) -> None:
    assert dict(container_of(resources=resources).requests) == requests


def test_pod_requests_sum_containers() -> None:
    containers = [
        container_manifest(name="a", resources={"requests": {"cpu": "1"}}),
        container_manifest(name="b", resources={"requests": {"cpu": "250m"}}),
    ]
    assert pod_of(containers=containers).requests() == {"cpu": 1250.0}


def test_container_fields() -> None:
    c = container_of(
        args=["--epochs", "3"],
        workingDir="/work",
        env=[{"name": "A", "value": "1"}, {"name": "RANK", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        ports=[{"containerPort": 23456, "name": "rdzv"}],
    )
    assert c.args == ("--epochs", "3")
    assert c.working_dir == "/work"
    assert c.env == (EnvVar("A", "1"), EnvVar("RANK", field_path="metadata.name"))
    assert c.ports == (ContainerPort(23456, "rdzv"),)


def test_pod_fields() -> None:
    pod = pod_of(
        restartPolicy="Never",
        nodeSelector={"zone": "a"},
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        terminationGracePeriodSeconds=5,
        schedulerName="caldera",
        initContainers=[container_manifest(name="init", resources={"requests": {"cpu": 4}})],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100", "h100"]}]}
                    ]
                }
            }
        },
    )
    assert pod.restart_policy == "Never"
    assert pod.node_selector == {"zone": "a"}
    assert pod.tolerations == (Toleration(key="gpu", operator="Exists", effect="NoSchedule"),)
    assert pod.termination_grace_period_seconds == 5.0
    assert pod.scheduler_name == "caldera"
    assert pod.node_affinity == (NodeSelectorTerm((SelectorRequirement("gpu", "In", ("a100", "h100")),)),)
    assert pod.requests() == {"cpu": 4000.0}  # the init container is the larger


def test_unknown_pod_fields_are_kept_not_refused() -> None:
    doc = job_manifest(tasks=[task_manifest(pod={"hostNetwork": True, "dnsPolicy": "ClusterFirst"})])
    assert parse_job(doc).spec.tasks[0].template.raw["spec"]["hostNetwork"] is True


def expressions(*reqs: dict[str, Any]) -> dict[str, Any]:
    terms = [{"matchExpressions": list(reqs)}]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


AFFINITY_TERM = f"{TEMPLATE}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"


@pytest.mark.parametrize(
    ("pod", "path", "rule_part"),
    [
        pytest.param({"containers": []}, f"{TEMPLATE}.containers", "at least one container", id="no-containers"),
        pytest.param(
            {"containers": [{"image": "x"}]}, f"{TEMPLATE}.containers[0].name", "is required", id="container-no-name"
        ),
        pytest.param(
            {"containers": [container_manifest(), container_manifest()]},
            f"{TEMPLATE}.containers[1].name",
            "duplicate container name 'main'",
            id="duplicate-container",
        ),
        pytest.param(
            {"restartPolicy": "Sometimes"},
            f"{TEMPLATE}.restartPolicy",
            "'Sometimes' is not one of Always, OnFailure, Never",
            id="restart-policy",
        ),
        pytest.param(
            {"containers": [container_manifest(resources={"requests": {"cpu": 4}, "limits": {"cpu": 2}})]},
            f"{TEMPLATE}.containers[0].resources.requests.cpu",
            "4 is more than the limit 2",
            id="request-above-limit",
        ),
        pytest.param(
            {"containers": [container_manifest(env=[{"name": "N", "value": 1}])]},
            f"{TEMPLATE}.containers[0].env[0].value",
            "must be a string, not a number (quote it)",
            id="env-unquoted-number",
        ),
        pytest.param(
            {"containers": [container_manifest(env=[{"value": "x"}])]},
            f"{TEMPLATE}.containers[0].env[0].name",
            "is required",
            id="env-no-name",
        ),
        pytest.param(
            {"containers": [container_manifest(ports=[{"containerPort": 70000}])]},
            f"{TEMPLATE}.containers[0].ports[0].containerPort",
            "between 1 and 65535",
            id="port-range",
        ),
        pytest.param(
            {"containers": [container_manifest(command="python train.py")]},
            f"{TEMPLATE}.containers[0].command",
            "must be a list, not a string",
            id="command-string",
        ),
        pytest.param(
            {"nodeSelector": {"gpu": True}},
            f"{TEMPLATE}.nodeSelector.gpu",
            "must be a string, not a boolean",
            id="selector-bool",
        ),
        pytest.param(
            {"affinity": expressions({"key": "gpu", "operator": "In"})},
            f"{AFFINITY_TERM}.matchExpressions[0].values",
            "must not be empty for operator In",
            id="in-without-values",
        ),
        pytest.param(
            {"affinity": expressions({"key": "gpu", "operator": "Gt", "values": ["many"]})},
            f"{AFFINITY_TERM}.matchExpressions[0].values",
            "single integer",
            id="gt-not-integer",
        ),
        pytest.param(
            {"affinity": expressions({"key": "gpu", "operator": "Near", "values": ["x"]})},
            f"{AFFINITY_TERM}.matchExpressions[0].operator",
            "'Near' is not one of",
            id="unknown-operator",
        ),
        pytest.param(
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchFields": []}, {"matchFields": [{"key": "metadata.name"}]}]
                        }
                    }
                }
            },
            AFFINITY_TERM.replace("nodeSelectorTerms[0]", "nodeSelectorTerms[1]") + ".matchFields",
            "not supported",
            id="match-fields",
        ),
        pytest.param(
            {"tolerations": [{"key": "gpu", "operator": "Exists", "value": "x"}]},
            f"{TEMPLATE}.tolerations[0].value",
            "must be empty when operator is Exists",
            id="toleration-exists-with-value",
        ),
        pytest.param(
            {"tolerations": [{"effect": "NoSchedule"}]},
            f"{TEMPLATE}.tolerations[0].operator",
            "must be Exists when key is empty",
            id="toleration-no-key",
        ),
        pytest.param(
            {"terminationGracePeriodSeconds": -1},
            f"{TEMPLATE}.terminationGracePeriodSeconds",
            "must be an integer >= 0",
            id="negative-grace",
        ),
    ],
)
def test_pod_template_error_names_the_path(pod: dict[str, Any], path: str, rule_part: str) -> None:
    error = pod_error(**pod)
    assert has_error(error, path, rule_part), messages(error)


def test_task_without_template_is_an_error() -> None:
    task = task_manifest()
    del task["template"]
    with pytest.raises(ValidationError) as info:
        parse_job(job_manifest(tasks=[task]))
    assert has_error(info.value, "spec.tasks[0].template", "is required")
