"""Volcano's admission rules: each broken rule names its field path and the rule."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from manifest_builders import has_error, job_manifest, messages, task_manifest

from caldera.core.errors import ValidationError
from caldera.core.manifest import parse_job
from caldera.core.objects import (
    Job,
    LifecyclePolicy,
    ObjectMeta,
    Queue,
    QueueSpec,
)
from caldera.core.validation import validate_job, validate_job_admission, validate_queue


def admission_error(doc: dict[str, Any]) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        parse_job(doc, "job.yaml")
    return info.value


def policy(action: str = "RestartJob", **fields: Any) -> dict[str, Any]:
    return {"action": action, **fields}


def two_tasks(**second: Any) -> list[dict[str, Any]]:
    return [task_manifest(name="ps", replicas=1), task_manifest(name="worker", replicas=2, **second)]


JOB_RULES = [
    # counts
    pytest.param(
        job_manifest(minAvailable=5),
        "spec.minAvailable",
        "5 is more than the 2 replicas of all tasks",
        id="minAvailable-above-replicas",
    ),
    pytest.param(
        job_manifest(minAvailable=-1), "spec.minAvailable", "must be an integer >= 0", id="minAvailable-negative"
    ),
    pytest.param(job_manifest(maxRetry=-1), "spec.maxRetry", "must be an integer >= 0", id="maxRetry-negative"),
    pytest.param(
        job_manifest(ttlSecondsAfterFinished=-5),
        "spec.ttlSecondsAfterFinished",
        "must be an integer >= 0",
        id="ttl-negative",
    ),
    pytest.param(job_manifest(minSuccess=0), "spec.minSuccess", "must be an integer >= 1", id="minSuccess-zero"),
    pytest.param(
        job_manifest(minSuccess=3),
        "spec.minSuccess",
        "3 is more than the 2 replicas of all tasks",
        id="minSuccess-above-replicas",
    ),
    pytest.param(
        job_manifest(tasks=[task_manifest(replicas=-1)]),
        "spec.tasks[0].replicas",
        "must be an integer >= 0",
        id="replicas-negative",
    ),
    pytest.param(
        job_manifest(tasks=[task_manifest(minAvailable=-1)]),
        "spec.tasks[0].minAvailable",
        "must be an integer >= 0",
        id="task-minAvailable-negative",
    ),
    pytest.param(
        job_manifest(tasks=[task_manifest(minAvailable=3)]),
        "spec.tasks[0].minAvailable",
        "3 is more than the task's 2 replicas",
        id="task-minAvailable-above-replicas",
    ),
    pytest.param(
        job_manifest(tasks=[task_manifest(maxRetry=-2)]),
        "spec.tasks[0].maxRetry",
        "must be an integer >= -1",
        id="task-maxRetry-below-unlimited",
    ),
    # names
    pytest.param(
        job_manifest(tasks=[task_manifest(name="a"), task_manifest(name="a")]),
        "spec.tasks[1].name",
        'duplicate task name "a" (also spec.tasks[0])',
        id="duplicate-task-name",
    ),
    pytest.param(
        job_manifest(tasks=[task_manifest(name="Worker")]),
        "spec.tasks[0].name",
        "DNS-1123 label",
        id="task-name-uppercase",
    ),
    pytest.param(
        job_manifest(tasks=[task_manifest(name="ps_0")]),
        "spec.tasks[0].name",
        "DNS-1123 label",
        id="task-name-underscore",
    ),
    pytest.param(job_manifest(name="My.Job"), "metadata.name", "DNS-1123 label", id="job-name"),
    pytest.param(job_manifest(name="j" * 64), "metadata.name", "longer than 63 characters", id="job-name-too-long"),
    pytest.param(
        job_manifest(name="j" * 50, tasks=[task_manifest(name="w" * 12)]),
        "spec.tasks[0].name",
        "pod name",
        id="pod-name-too-long",
    ),
    # policies
    pytest.param(
        job_manifest(policies=[policy(event="PodRunning")]),
        "spec.policies[0].event",
        'unknown event "PodRunning"',
        id="internal-event",
    ),
    pytest.param(
        job_manifest(policies=[policy(event="OutOfSync")]),
        "spec.policies[0].event",
        'unknown event "OutOfSync"',
        id="out-of-sync-event",
    ),
    pytest.param(
        job_manifest(policies=[policy("SyncJob", event="PodFailed")]),
        "spec.policies[0].action",
        'unknown action "SyncJob"',
        id="internal-action",
    ),
    pytest.param(
        job_manifest(policies=[policy("Restart", exitCode=1)]),
        "spec.policies[0].action",
        'unknown action "Restart"',
        id="unknown-action-with-exit-code",
    ),
    pytest.param(
        job_manifest(policies=[policy(event="PodFailed", exitCode=1)]),
        "spec.policies[0]",
        "must not set both an event and an exitCode",
        id="event-and-exit-code",
    ),
    pytest.param(
        job_manifest(policies=[policy()]),
        "spec.policies[0]",
        "must set an event, events or an exitCode",
        id="neither-event-nor-exit-code",
    ),
    pytest.param(
        job_manifest(policies=[policy(exitCode=0)]), "spec.policies[0].exitCode", "must not be 0", id="exit-code-zero"
    ),
    pytest.param(
        job_manifest(policies=[policy(exitCode=137), policy("AbortJob", exitCode=137)]),
        "spec.policies[1].exitCode",
        "exit code 137 is already handled by spec.policies[0]",
        id="duplicate-exit-code",
    ),
    pytest.param(
        job_manifest(policies=[policy(event="PodFailed"), policy("AbortJob", events=["PodEvicted", "PodFailed"])]),
        "spec.policies[1].events",
        "event PodFailed is already handled by spec.policies[0]",
        id="event-in-two-policies",
    ),
    pytest.param(
        job_manifest(
            tasks=[task_manifest(policies=[policy(event="PodFailed"), policy("RestartTask", event="PodFailed")])]
        ),
        "spec.tasks[0].policies[1].event",
        "already handled by spec.tasks[0].policies[0]",
        id="event-in-two-task-policies",
    ),
    pytest.param(
        job_manifest(policies=[policy(event="*"), policy("AbortJob", event="PodEvicted")]),
        "spec.policies",
        '"*" matches every event',
        id="star-with-other-events",
    ),
    pytest.param(
        job_manifest(policies=[policy(events=["*", "PodFailed"])]),
        "spec.policies",
        '"*" matches every event',
        id="star-with-other-event-same-policy",
    ),
    pytest.param(
        job_manifest(policies=[policy("RestartTask", event="JobUpdated")]),
        "spec.policies[0].action",
        "RestartTask acts on the task or pod of the event, but JobUpdated is raised for the whole job",
        id="restart-task-on-job-event",
    ),
    pytest.param(
        job_manifest(tasks=[task_manifest(policies=[policy("RestartPod", event="Unknown")])]),
        "spec.tasks[0].policies[0].action",
        "but Unknown is raised for the whole job",
        id="restart-pod-on-job-event-in-task",
    ),
    # plugins and dependencies
    pytest.param(
        job_manifest(plugins={"horovod": []}), "spec.plugins.horovod", "unknown job plugin", id="unknown-plugin"
    ),
    pytest.param(
        job_manifest(plugins={"mpi": []}),
        "spec.plugins.mpi",
        'the MPI master task "master" is not a task of this job',
        id="mpi-without-master",
    ),
    pytest.param(
        job_manifest(tasks=two_tasks(), plugins={"mpi": ["--master=ps", "--worker", "workers"]}),
        "spec.plugins.mpi",
        'the MPI worker task "workers"',
        id="mpi-worker-flag",
    ),
    pytest.param(
        job_manifest(tasks=two_tasks(dependsOn={"name": ["chief"]})),
        "spec.tasks[1].dependsOn.name[0]",
        'no task named "chief"',
        id="depends-on-missing-task",
    ),
    pytest.param(
        job_manifest(tasks=two_tasks(dependsOn={"name": ["worker"]})),
        "spec.tasks[1].dependsOn.name[0]",
        "cannot depend on itself",
        id="depends-on-itself",
    ),
    pytest.param(
        job_manifest(
            tasks=[
                task_manifest(name="a", dependsOn={"name": ["c"]}),
                task_manifest(name="b", dependsOn={"name": ["a"]}),
                task_manifest(name="c", dependsOn={"name": ["b"]}),
            ]
        ),
        "spec.tasks[0].dependsOn",
        "tasks depend on each other in a cycle: a → c → b → a",
        id="depends-on-cycle",
    ),
]


@pytest.mark.parametrize(("doc", "path", "rule_part"), JOB_RULES)
def test_admission_rule_names_path_and_rule(doc: dict[str, Any], path: str, rule_part: str) -> None:
    error = admission_error(doc)
    assert has_error(error, path, rule_part), messages(error)


@pytest.mark.parametrize(
    "policies",
    [
        pytest.param([policy(event="*")], id="star-alone"),
        pytest.param([policy("RestartTask", event="*")], id="restart-task-on-star"),
        pytest.param(
            [policy(event="PodFailed"), policy("RestartPod", exitCode=137)], id="event-and-exit-code-policies"
        ),
        pytest.param([policy("RestartPod", event="PodPending", timeout="5m")], id="pending-with-timeout"),
        pytest.param([policy("CompleteJob", events=["TaskCompleted", "TaskFailed"])], id="task-events"),
        pytest.param([policy("RestartPartition", event="PodFailed")], id="restart-partition"),
    ],
)
def test_admissible_policies(policies: list[dict[str, Any]]) -> None:
    assert parse_job(job_manifest(policies=policies)).spec.policies


def test_same_event_at_job_and_task_level_is_allowed() -> None:
    # Task policies are consulted first, then the job's: one event in both lists is the point.
    doc = job_manifest(
        tasks=[task_manifest(policies=[policy("RestartTask", event="PodFailed")])], policies=[policy(event="PodFailed")]
    )
    assert parse_job(doc).spec.tasks[0].policies[0].action == "RestartTask"


def test_acyclic_dependencies_are_allowed() -> None:
    tasks = [
        task_manifest(name="a"),
        task_manifest(name="b", dependsOn={"name": ["a"]}),
        task_manifest(name="c", dependsOn={"name": ["a", "b"]}),
    ]
    assert parse_job(job_manifest(tasks=tasks)).spec.tasks[2].depends_on == ("a", "b")


def test_validate_job_checks_jobs_built_in_code() -> None:
    job = parse_job(job_manifest())
    broken = dataclasses.replace(
        job.spec,
        tasks=(),
        min_available=1,
        policies=(LifecyclePolicy(action="RestartJob", events=("PodFailed",), timeout=0.0),),
    )
    errors = validate_job(Job(metadata=ObjectMeta(name="train"), spec=broken))
    assert [str(e) for e in errors] == [
        "spec.tasks: must have at least one task",
        "spec.minAvailable: 1 is more than the 0 replicas of all tasks",
        "spec.policies[0].timeout: must be a positive duration",
    ]


def test_a_valid_job_has_no_errors() -> None:
    assert validate_job(parse_job(job_manifest())) == []


# ---------------------------------------------------------------- admission against queues


def queue(name: str, *, state: str = "Open", parent: str = "") -> Queue:
    return Queue(metadata=ObjectMeta(name=name), spec=QueueSpec(parent=parent), state=state)


QUEUES = {
    q.name: q
    for q in [
        queue("default"),
        queue("frozen", state="Closed"),
        queue("draining", state="Closing"),
        queue("org"),
        queue("team-a", parent="org"),
        queue("team-b", parent="org"),
    ]
}


@pytest.mark.parametrize(
    ("queue_name", "rule"),
    [
        pytest.param("missing", 'queue "missing" does not exist', id="missing"),
        pytest.param("frozen", 'queue "frozen" is Closed; only Open queues accept jobs', id="closed"),
        pytest.param("draining", 'queue "draining" is Closing; only Open queues accept jobs', id="closing"),
        pytest.param(
            "org", 'queue "org" is the parent of "team-a", "team-b"; jobs go to leaf queues only', id="parent"
        ),
    ],
)
def test_admission_against_queues(queue_name: str, rule: str) -> None:
    job = parse_job(job_manifest(queue=queue_name))
    assert [str(e) for e in validate_job_admission(job, QUEUES)] == [f"spec.queue: {rule}"]


@pytest.mark.parametrize("queue_name", ["default", "team-a"])
def test_admission_to_open_leaf_queues(queue_name: str) -> None:
    assert validate_job_admission(parse_job(job_manifest(queue=queue_name)), QUEUES) == []


def test_admission_includes_the_job_rules() -> None:
    job = parse_job(job_manifest(queue="missing"))
    bad = Job(metadata=job.metadata, spec=dataclasses.replace(job.spec, max_retry=-1))
    assert [e.path for e in validate_job_admission(bad, QUEUES)] == ["spec.maxRetry", "spec.queue"]


def test_validate_queue_checks_deserved_against_capability() -> None:
    q = Queue(metadata=ObjectMeta(name="q"), spec=QueueSpec(capability={"cpu": 4000.0}, deserved={"cpu": 8000.0}))
    assert [str(e) for e in validate_queue(q)] == ["spec.deserved.cpu: 8 is more than the capability 4"]
