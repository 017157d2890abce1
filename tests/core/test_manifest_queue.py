"""Reading Volcano Queues and Kubernetes PriorityClasses."""

from __future__ import annotations

from typing import Any

import pytest
from manifest_builders import has_error, messages, queue_manifest

from caldera.core.errors import ValidationError
from caldera.core.manifest import parse_priority_class, parse_queue
from caldera.core.objects import PriorityClass, QueueSpec


def queue_error(doc: dict[str, Any]) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        parse_queue(doc, "queue.yaml")
    return info.value


def test_queue_defaults() -> None:
    queue = parse_queue(queue_manifest())
    assert queue.name == "research"
    assert queue.spec == QueueSpec(weight=1, reclaimable=True)
    assert queue.state == "Open"


def test_queue_fields() -> None:
    queue = parse_queue(
        queue_manifest(
            weight=4,
            capability={"cpu": 64, "memory": "256Gi", "nvidia.com/gpu": 8},
            guarantee={"resource": {"cpu": 8}},
            deserved={"cpu": 32},
            reclaimable=False,
            parent="org",
            priority=10,
            type="research",  # informational in Volcano: accepted
        )
    )
    spec = queue.spec
    assert spec.weight == 4
    assert spec.capability == {"cpu": 64000.0, "memory": 256 * 2.0**30, "nvidia.com/gpu": 8000.0}
    assert spec.guarantee == {"cpu": 8000.0}
    assert spec.deserved == {"cpu": 32000.0}
    assert (spec.reclaimable, spec.parent, spec.priority) == (False, "org", 10)


def test_weight_zero_reads_as_unset_like_the_webhook() -> None:
    assert parse_queue(queue_manifest(weight=0)).spec.weight == 1


@pytest.mark.parametrize(
    ("doc", "state"),
    [
        pytest.param(queue_manifest(status={"state": "Closed"}), "Closed", id="status"),
        pytest.param(queue_manifest(state="Closing"), "Closing", id="spec"),
        pytest.param(queue_manifest(state="Open", status={"state": "Closed"}), "Open", id="spec-wins"),
    ],
)
def test_queue_state(doc: dict[str, Any], state: str) -> None:
    assert parse_queue(doc).state == state


@pytest.mark.parametrize(
    ("doc", "path", "rule_part"),
    [
        pytest.param(queue_manifest(weight=70000), "spec.weight", "between 1 and 65535", id="weight-too-big"),
        pytest.param(queue_manifest(weight=-1), "spec.weight", "between 1 and 65535", id="weight-negative"),
        pytest.param(queue_manifest(weight="2"), "spec.weight", "must be an integer", id="weight-string"),
        pytest.param(
            queue_manifest(state="Paused"), "spec.state", "'Paused' is not one of Open, Closing, Closed", id="bad-state"
        ),
        pytest.param(
            queue_manifest(capability={"cpu": "lots"}),
            "spec.capability.cpu",
            "'lots' is not a quantity",
            id="bad-quantity",
        ),
        pytest.param(
            queue_manifest(guarantee={"cpu": 2}),
            "spec.guarantee.cpu",
            "go under spec.guarantee.resource",
            id="guarantee-without-resource",
        ),
        pytest.param(
            queue_manifest(reclaimable="yes"), "spec.reclaimable", "must be true or false", id="reclaimable-string"
        ),
        pytest.param(queue_manifest(wieght=2), "spec.wieght", "did you mean weight?", id="typo"),
        pytest.param(queue_manifest(dequeueStrategy="fifo"), "spec.dequeueStrategy", "not supported", id="fifo"),
        pytest.param(queue_manifest(name="Research"), "metadata.name", "DNS-1123", id="uppercase-name"),
        pytest.param(
            queue_manifest(capability={"cpu": 4}, guarantee={"resource": {"cpu": 8}}),
            "spec.guarantee.resource.cpu",
            "8 is more than the capability 4",
            id="guarantee-above-capability",
        ),
        pytest.param(queue_manifest(name="a", parent="a"), "spec.parent", "cannot be its own parent", id="own-parent"),
    ],
)
def test_queue_error_names_the_path(doc: dict[str, Any], path: str, rule_part: str) -> None:
    error = queue_error(doc)
    assert has_error(error, path, rule_part), messages(error)


def test_traverse_dequeue_strategy_is_the_default_and_allowed() -> None:
    assert parse_queue(queue_manifest(dequeueStrategy="traverse")).name == "research"


# ---------------------------------------------------------------- priority classes


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param({"name": "high", "value": 1000}, PriorityClass("high", 1000), id="short-form"),
        pytest.param(
            {"name": "low", "value": -5, "preemptionPolicy": "Never", "globalDefault": True},
            PriorityClass("low", -5, global_default=True, preemption_policy="Never"),
            id="short-form-all-fields",
        ),
        pytest.param(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "high"},
                "value": 1000,
                "description": "for production training",
            },
            PriorityClass("high", 1000),
            id="full-form",
        ),
        pytest.param(
            {"name": "system-critical", "value": 2_000_000_000},
            PriorityClass("system-critical", 2_000_000_000),
            id="system",
        ),
    ],
)
def test_priority_class_forms(doc: dict[str, Any], expected: PriorityClass) -> None:
    assert parse_priority_class(doc) == expected


@pytest.mark.parametrize(
    ("doc", "path", "rule_part"),
    [
        pytest.param({"name": "high"}, "value", "is required", id="no-value"),
        pytest.param({"value": 1}, "name", "is required", id="no-name"),
        pytest.param({"name": "high", "value": "1000"}, "value", "must be an integer", id="value-string"),
        pytest.param(
            {"name": "high", "value": 2_000_000_000}, "value", "must be at most 1000000000", id="value-too-high"
        ),
        pytest.param(
            {"name": "high", "value": 1, "preemptionPolicy": "Always"},
            "preemptionPolicy",
            "'Always' is not one of",
            id="bad-policy",
        ),
        pytest.param({"name": "high", "value": 1, "vaule": 2}, "vaule", "did you mean value?", id="typo"),
        pytest.param(
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": 1},
            "metadata.name",
            "is required",
            id="full-form-no-name",
        ),
    ],
)
def test_priority_class_error_names_the_path(doc: dict[str, Any], path: str, rule_part: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_priority_class(doc, "cluster.yaml")
    assert has_error(info.value, path, rule_part), messages(info.value)
