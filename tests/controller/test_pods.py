"""Rendering pods and PodGroups as Volcano names and labels them; TTL."""

from __future__ import annotations

import pytest

from caldera.controller import make_pod, make_podgroup, podgroup_name, ttl_expired
from caldera.core.objects import (
    COMPLETED,
    FAILED,
    GROUP_NAME_KEY,
    JOB_NAME_KEY,
    JOB_NAMESPACE_KEY,
    JOB_RETRY_COUNT_KEY,
    JOB_VERSION_KEY,
    PG_PENDING,
    POD_PENDING,
    PREEMPTABLE_KEY,
    QUEUE_NAME_KEY,
    RUNNING,
    TASK_INDEX_KEY,
    TASK_SPEC_KEY,
    TERMINATED,
)

from .builders import make_job, make_task


def test_pod_name_labels_and_annotations() -> None:
    job = make_job(
        name="mnist",
        namespace="team",
        uid="u1",
        tasks=[make_task(name="worker", replicas=3, labels={"app": "mnist"})],
        queue="research",
        version=4,
        retry_count=2,
        labels={PREEMPTABLE_KEY: "true"},
    )
    pod = make_pod(job, job.spec.tasks[0], 2, priority=100, now=12.0)
    assert (pod.name, pod.metadata.namespace) == ("mnist-worker-2", "team")
    assert (pod.job, pod.task, pod.index) == ("mnist", "worker", 2)
    assert (pod.priority, pod.metadata.creation_timestamp, pod.status.phase) == (100, 12.0, POD_PENDING)
    assert pod.metadata.labels == {
        "app": "mnist",
        JOB_NAME_KEY: "mnist",
        JOB_NAMESPACE_KEY: "team",
        TASK_SPEC_KEY: "worker",
        TASK_INDEX_KEY: "2",
        QUEUE_NAME_KEY: "research",
        PREEMPTABLE_KEY: "true",
    }
    assert pod.metadata.annotations == {
        JOB_NAME_KEY: "mnist",
        TASK_SPEC_KEY: "worker",
        TASK_INDEX_KEY: "2",
        QUEUE_NAME_KEY: "research",
        GROUP_NAME_KEY: "mnist-u1",
        JOB_VERSION_KEY: "4",
        JOB_RETRY_COUNT_KEY: "2",
    }


@pytest.mark.parametrize(
    ("template_class", "job_class", "expected"),
    [
        pytest.param("", "high", "high", id="job-class-is-the-default"),
        pytest.param("low", "high", "low", id="template-class-wins"),
    ],
)
def test_pod_priority_class_and_scheduler(template_class: str, job_class: str, expected: str) -> None:
    job = make_job(tasks=[make_task(priority_class_name=template_class)], priority_class_name=job_class)
    pod = make_pod(job, job.spec.tasks[0], 0, priority=0, now=0.0)
    assert pod.spec.priority_class_name == expected
    assert pod.spec.scheduler_name == "volcano"
    assert pod.spec.containers == job.spec.tasks[0].template.spec.containers


@pytest.mark.parametrize(("uid", "name"), [("abc", "job-abc"), ("", "job")])
def test_podgroup_name(uid: str, name: str) -> None:
    assert podgroup_name(make_job(uid=uid)) == name


def test_make_podgroup() -> None:
    ps = make_task(name="ps", replicas=2, requests={"cpu": 1000.0, "memory": 2.0})
    worker = make_task(name="worker", replicas=4, min_available=2, requests={"cpu": 4000.0, "nvidia.com/gpu": 1000.0})
    job = make_job(uid="u", tasks=[ps, worker], min_available=3, queue="q", priority_class_name="hi", labels={"a": "b"})
    pg = make_podgroup(job, now=5.0)
    assert (pg.metadata.name, pg.job, pg.min_member) == ("job-u", "job", 3)
    assert (pg.queue, pg.priority_class_name) == ("q", "hi")
    assert (pg.phase, pg.metadata.creation_timestamp, pg.metadata.labels) == (PG_PENDING, 5.0, {"a": "b"})
    assert pg.min_task_member == {"ps": 2, "worker": 2}
    # The first three pods in spec order: both pservers and one worker.
    assert pg.min_resources == {"cpu": 6000.0, "memory": 4.0, "nvidia.com/gpu": 1000.0}


def test_min_resources_skips_empty_tasks() -> None:
    job = make_job(tasks=[make_task(name="idle", replicas=0), make_task(requests={"cpu": 500.0})], min_available=2)
    assert make_podgroup(job, now=0.0).min_resources == {"cpu": 1000.0}


@pytest.mark.parametrize(
    ("phase", "ttl", "now", "expired"),
    [
        pytest.param(COMPLETED, 60, 159.0, False, id="completed-before-ttl"),
        pytest.param(COMPLETED, 60, 160.0, True, id="completed-at-ttl"),
        pytest.param(FAILED, 0, 100.0, True, id="failed-ttl-zero"),
        pytest.param(TERMINATED, 10, 200.0, True, id="terminated"),
        pytest.param(RUNNING, 10, 1e9, False, id="running-never"),
        pytest.param(COMPLETED, None, 1e9, False, id="no-ttl-never"),
    ],
)
def test_ttl_expired(phase: str, ttl: int | None, now: float, expired: bool) -> None:
    job = make_job(phase=phase, ttl_seconds_after_finished=ttl)
    job.status.completion_time = 100.0
    assert ttl_expired(job, now) is expired


def test_ttl_counts_from_the_last_transition_without_a_completion_time() -> None:
    job = make_job(phase=COMPLETED, ttl_seconds_after_finished=5)
    job.status.last_transition_time = 10.0
    assert not ttl_expired(job, 14.0)
    assert ttl_expired(job, 15.0)
