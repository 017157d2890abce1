"""Objects between the Kubernetes API's JSON and caldera's model (no API server: pure functions)."""

from __future__ import annotations

import pytest

from caldera.backends.kube.convert import (
    from_time,
    job_from_api,
    job_status_from_api,
    job_status_to_api,
    node_from_api,
    pod_exit_code,
    pod_requests,
    queue_from_api,
    to_time,
)
from caldera.core import objects as o
from caldera.core.errors import ValidationError


def api_job(**spec: object) -> dict[str, object]:
    """A Job as the API server returns it: metadata it added, and a template field caldera does not model."""
    template = {"spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "Never"}]}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": "j",
            "namespace": "team",
            "uid": "0b5c-uid",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2026-11-28T02:00:00Z",
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {"tasks": [{"name": "w", "replicas": 2, "template": template}], **spec},
        "status": {},
    }


def test_a_job_from_the_api_gets_the_webhooks_defaults_and_keeps_its_identity():
    job = job_from_api(api_job())
    assert (job.key, job.metadata.uid, job.metadata.generation) == ("team/j", "0b5c-uid", 3)
    assert (job.spec.queue, job.spec.max_retry, job.spec.min_available) == ("default", 3, 2)
    assert job.metadata.creation_timestamp == from_time("2026-11-28T02:00:00Z")


def test_an_invalid_job_from_the_api_names_the_field():
    with pytest.raises(ValidationError, match="minAvailable"):
        job_from_api(api_job(minAvailable=5))


def test_a_job_status_survives_the_round_trip_through_the_api():
    status = o.JobStatus(phase=o.RUNNING, reason="r", message="m", last_transition_time=1_700_000_000.0,
                         retry_count=2, version=3, min_available=2, running=2, start_time=1_700_000_001.0,
                         conditions=[(o.PENDING, 1_699_999_990.0), (o.RUNNING, 1_700_000_000.0)])  # fmt: skip
    body = job_status_to_api(status, {"w": {"Running": 2}})
    assert body["state"]["lastTransitionTime"] == "2023-11-14T22:13:20Z"
    assert body["taskStatusCount"] == {"w": {"phase": {"Running": 2}}}
    back = job_status_from_api(body)
    assert back is not None
    assert (back.phase, back.retry_count, back.version, back.running) == (o.RUNNING, 2, 3, 2)
    assert (back.start_time, back.conditions) == (status.start_time, status.conditions)


def test_a_job_the_controller_never_wrote_has_no_status():
    assert job_status_from_api({}) is None


def test_a_node_counts_gpus_taints_readiness_and_what_other_schedulers_hold():
    node = node_from_api(
        {
            "metadata": {"name": "n", "labels": {"pool": "a"}},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}], "unschedulable": True},
            "status": {
                "allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        used={"cpu": 2000.0, "nvidia.com/gpu": 1000.0},
    )
    assert node.allocatable["cpu"] == 6000.0 and node.allocatable["nvidia.com/gpu"] == 3000.0
    assert (node.ready, node.unschedulable, node.labels, node.taints[0].key) == (True, True, {"pool": "a"}, "k")


def test_a_pods_requests_and_exit_code():
    pod = {
        "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "500m"}}}]},
        "status": {"phase": "Failed", "containerStatuses": [{"state": {"terminated": {"exitCode": 3}}}]},
    }
    assert pod_requests(pod) == {"nvidia.com/gpu": 1000.0, "cpu": 500.0}
    assert pod_exit_code(pod) == 3
    assert pod_exit_code({"status": {"phase": "Failed"}}) == 1


def test_a_queue_closed_through_its_status_is_closed():
    queue = queue_from_api(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "q", "uid": "u", "resourceVersion": "1"},
            "spec": {"weight": 2, "capability": {"nvidia.com/gpu": "2"}},
            "status": {"state": "Closed", "running": 1},
        }
    )
    assert (queue.name, queue.state, queue.spec.weight, queue.spec.capability) == (
        "q", o.QUEUE_CLOSED, 2, {"nvidia.com/gpu": 2000.0},
    )  # fmt: skip


def test_times_are_rfc3339_utc():
    assert to_time(0.0) == "1970-01-01T00:00:00Z"
    assert to_time(None) is None
    assert from_time("bad") is None
