"""Reading Volcano Job manifests: the CTR example, webhook defaults, and schema errors by path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from manifest_builders import container_manifest, has_error, job_manifest, messages, task_manifest

from caldera.core.errors import ValidationError
from caldera.core.manifest import load_objects, parse_job
from caldera.core.objects import EnvVar, Job, LifecyclePolicy

FIXTURES = Path(__file__).parent.parent / "fixtures"


def parse_error(doc: dict[str, Any]) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        parse_job(doc, "job.yaml")
    return info.value


# ---------------------------------------------------------------- the CTR example


@pytest.fixture(scope="module")
def ctr() -> Job:
    (job,) = load_objects((FIXTURES / "ctr-volcano.yaml").read_text(), "ctr-volcano.yaml")
    assert isinstance(job, Job)
    return job


def test_ctr_job_level_fields(ctr: Job) -> None:
    assert ctr.name == "ctr-volcano"
    assert ctr.namespace == "default"
    assert ctr.spec.min_available == 4
    assert ctr.spec.scheduler_name == "volcano"
    assert ctr.spec.queue == "default"
    assert ctr.spec.policies == (
        LifecyclePolicy(action="RestartJob", events=("PodEvicted",)),
        LifecyclePolicy(action="RestartJob", events=("PodFailed",)),
    )


def test_ctr_pserver_task(ctr: Job) -> None:
    pserver = ctr.spec.tasks[0]
    assert (pserver.name, pserver.replicas, pserver.min_members) == ("pserver", 2, 2)
    assert pserver.template.labels == {"paddle-job-pserver": "fluid-ctr"}
    assert pserver.template.spec.restart_policy == "OnFailure"
    (container,) = pserver.template.spec.containers
    assert container.command == ("paddle_k8s", "start_fluid")
    assert container.requests == {"cpu": 1000.0, "memory": 100e6, "ephemeral-storage": 2.0**30}
    assert container.limits["memory"] == 30 * 2.0**30
    assert EnvVar(name="GLOG_v", value="0") in container.env
    assert EnvVar(name="POD_IP", field_path="status.podIP") in container.env
    assert EnvVar(name="NAMESPACE", field_path="metadata.namespace") in container.env


def test_ctr_trainer_task(ctr: Job) -> None:
    trainer = ctr.spec.tasks[1]
    assert (trainer.name, trainer.replicas) == ("trainer", 2)
    assert trainer.policies == (LifecyclePolicy(action="CompleteJob", events=("TaskCompleted",)),)
    # `- name: TOPOLOGY` with no value is an empty variable, not an error.
    assert EnvVar(name="TOPOLOGY") in trainer.template.spec.containers[0].env


def test_ctr_keeps_unmodelled_pod_fields_in_raw(ctr: Job) -> None:
    raw = ctr.spec.tasks[0].template.raw
    assert raw["spec"]["imagePullSecrets"] == [{"name": "default-secret"}]
    assert raw["spec"]["volumes"][0]["name"] == "seqdata"


def test_ctr_round_trips_through_to_dict(ctr: Job) -> None:
    assert parse_job(ctr.to_dict()).spec == ctr.spec


# ---------------------------------------------------------------- webhook defaults


def test_defaults_of_a_minimal_job() -> None:
    job = parse_job(job_manifest(tasks=[task_manifest(name=None, replicas=3), task_manifest(name=None, replicas=1)]))
    spec = job.spec
    assert (spec.queue, spec.scheduler_name, spec.max_retry) == ("default", "volcano", 3)
    assert [t.name for t in spec.tasks] == ["default0", "default1"]
    assert [t.max_retry for t in spec.tasks] == [3, 3]
    assert [t.min_available for t in spec.tasks] == [None, None]
    assert [t.min_members for t in spec.tasks] == [3, 1]
    assert spec.min_available == 4
    assert spec.tasks[0].template.spec.restart_policy == "Always"
    assert spec.tasks[0].template.spec.scheduler_name == "volcano"


def test_job_min_available_defaults_to_sum_of_task_min_members() -> None:
    job = parse_job(
        job_manifest(tasks=[task_manifest(name="ps", replicas=2), task_manifest(replicas=4, minAvailable=1)])
    )
    assert job.spec.min_available == 3


@pytest.mark.parametrize(
    ("given", "max_retry", "min_available"),
    [
        pytest.param({}, 3, 2, id="absent"),
        pytest.param({"maxRetry": 0, "minAvailable": 0}, 3, 2, id="zero-reads-as-unset"),
        pytest.param({"maxRetry": 5, "minAvailable": 1}, 5, 1, id="kept"),
    ],
)
def test_zero_reads_as_unset_like_the_webhook(given: dict[str, Any], max_retry: int, min_available: int) -> None:
    spec = parse_job(job_manifest(**given)).spec
    assert (spec.max_retry, spec.min_available) == (max_retry, min_available)


def test_task_max_retry_minus_one_means_unlimited() -> None:
    assert parse_job(job_manifest(tasks=[task_manifest(maxRetry=-1)])).spec.tasks[0].max_retry == -1


def test_pod_inherits_job_priority_class_unless_it_names_its_own() -> None:
    tasks = [task_manifest(name="a"), task_manifest(name="b", pod={"priorityClassName": "low"})]
    job = parse_job(job_manifest(tasks=tasks, priorityClassName="high"))
    assert [t.template.spec.priority_class_name for t in job.spec.tasks] == ["high", "low"]
    assert job.spec.priority_class_name == "high"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param({"env": []}, {"env": ()}, id="env-alone"),
        pytest.param({"pytorch": ["--master=master"]}, {"pytorch": ("--master=master",), "svc": ()}, id="pytorch-svc"),
        pytest.param({"tensorflow": None}, {"tensorflow": (), "svc": ()}, id="tensorflow-svc"),
        pytest.param({"mpi": [], "svc": ["--x"]}, {"mpi": (), "svc": ("--x",), "ssh": ()}, id="mpi-ssh-keeps-svc"),
    ],
)
def test_plugins_get_the_webhook_defaults(given: dict[str, Any], expected: dict[str, tuple[str, ...]]) -> None:
    tasks = [task_manifest(name="master", replicas=1), task_manifest(name="worker")]
    assert dict(parse_job(job_manifest(tasks=tasks, plugins=given)).spec.plugins) == expected


def test_optional_job_fields() -> None:
    tasks = [task_manifest(name="a"), task_manifest(name="b", dependsOn={"name": ["a"]})]
    job = parse_job(job_manifest(tasks=tasks, ttlSecondsAfterFinished=60, minSuccess=1, queue="research"))
    assert job.spec.ttl_seconds_after_finished == 60
    assert job.spec.min_success == 1
    assert job.spec.queue == "research"
    assert job.spec.tasks[1].depends_on == ("a",)


# ---------------------------------------------------------------- policies and durations


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param(
            {"event": "PodFailed", "action": "RestartJob"}, LifecyclePolicy("RestartJob", ("PodFailed",)), id="event"
        ),
        pytest.param(
            {"events": ["PodFailed", "PodEvicted"], "action": "AbortJob"},
            LifecyclePolicy("AbortJob", ("PodFailed", "PodEvicted")),
            id="events",
        ),
        pytest.param(
            {"events": ["PodFailed"], "event": "PodFailed", "action": "AbortJob"},
            LifecyclePolicy("AbortJob", ("PodFailed",)),
            id="event-and-events-merged",
        ),
        pytest.param(
            {"exitCode": 137, "action": "RestartTask"}, LifecyclePolicy("RestartTask", exit_code=137), id="exitCode"
        ),
    ],
)
def test_policy_forms(policy: dict[str, Any], expected: LifecyclePolicy) -> None:
    assert parse_job(job_manifest(policies=[policy])).spec.policies == (expected,)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("30s", 30.0, id="seconds"),
        pytest.param("5m", 300.0, id="minutes"),
        pytest.param("1h30m", 5400.0, id="hours-and-minutes"),
        pytest.param("1.5h", 5400.0, id="fractional-hours"),
        pytest.param("2m30.5s", 150.5, id="minutes-and-fractional-seconds"),
        pytest.param("1500ms", 1.5, id="milliseconds"),
    ],
)
def test_policy_timeout_is_a_go_duration(text: str, seconds: float) -> None:
    policy = {"event": "PodPending", "action": "RestartPod", "timeout": text}
    assert parse_job(job_manifest(policies=[policy])).spec.policies[0].timeout == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("timeout", "rule_part"),
    [
        pytest.param("5 minutes", "'5 minutes' is not a duration", id="words"),
        pytest.param("5x", "'5x' is not a duration", id="unknown-unit"),
        pytest.param("", "is not a duration", id="empty"),
        pytest.param(30, "must be a duration like 30s, 5m or 1h30m, not a number", id="bare-number"),
        pytest.param("-5s", "must be a positive duration", id="negative"),
        pytest.param("0s", "must be a positive duration", id="zero"),
    ],
)
def test_bad_policy_timeout(timeout: object, rule_part: str) -> None:
    error = parse_error(job_manifest(policies=[{"event": "PodFailed", "action": "RestartJob", "timeout": timeout}]))
    assert has_error(error, "spec.policies[0].timeout", rule_part), messages(error)


# ---------------------------------------------------------------- schema errors


@pytest.mark.parametrize(
    ("doc", "path", "rule_part"),
    [
        pytest.param(
            job_manifest(minAvaliable=2),
            "spec.minAvaliable",
            "unknown field (did you mean minAvailable?)",
            id="typo-in-spec",
        ),
        pytest.param(
            job_manifest(tasks=[task_manifest(replica=2)]),
            "spec.tasks[0].replica",
            "did you mean replicas?",
            id="typo-in-task",
        ),
        pytest.param(
            job_manifest(policies=[{"event": "PodFailed", "actoin": "RestartJob"}]),
            "spec.policies[0].actoin",
            "unknown field",
            id="typo-in-policy",
        ),
        pytest.param(
            job_manifest(tasks=[task_manifest(replicas="2")]),
            "spec.tasks[0].replicas",
            "must be an integer, not a string",
            id="replicas-string",
        ),
        pytest.param(
            job_manifest(tasks=[task_manifest(replicas=None)]),
            "spec.tasks[0].replicas",
            "is required",
            id="replicas-missing",
        ),
        pytest.param(
            job_manifest(tasks=[task_manifest(replicas=True)]),
            "spec.tasks[0].replicas",
            "must be an integer, not a boolean",
            id="replicas-bool",
        ),
        pytest.param(job_manifest(tasks=[]), "spec.tasks", "must have at least one task", id="no-tasks"),
        pytest.param(job_manifest(tasks={"a": 1}), "spec.tasks", "must be a list, not a mapping", id="tasks-mapping"),
        pytest.param(job_manifest(tasks=[None]), "spec.tasks[0]", "must be a mapping, not null", id="task-null"),
        pytest.param(job_manifest(queue=5), "spec.queue", "must be a string, not a number", id="queue-number"),
        pytest.param(job_manifest(plugins=["svc"]), "spec.plugins", "must be a mapping, not a list", id="plugins-list"),
        pytest.param(
            job_manifest(plugins={"svc": "--x"}),
            "spec.plugins.svc",
            "must be a list, not a string",
            id="plugin-args-string",
        ),
        pytest.param(
            job_manifest(policies=[{"event": "PodFailed"}]),
            "spec.policies[0].action",
            "is required",
            id="policy-no-action",
        ),
        pytest.param(
            job_manifest(volumes=[{"mountPath": "/data"}]), "spec.volumes", "not supported by caldera yet", id="volumes"
        ),
        pytest.param(
            job_manifest(networkTopology={"mode": "hard"}),
            "spec.networkTopology",
            "not supported",
            id="network-topology",
        ),
        pytest.param(
            job_manifest(tasks=[task_manifest(topologyPolicy="single-numa-node")]),
            "spec.tasks[0].topologyPolicy",
            "not supported",
            id="numa",
        ),
        pytest.param(
            job_manifest(tasks=[task_manifest(name="a"), task_manifest(dependsOn={"name": ["a"], "iteration": "any"})]),
            "spec.tasks[1].dependsOn.iteration",
            "not supported",
            id="depends-on-any",
        ),
        pytest.param({**job_manifest(), "metadata": {}}, "metadata.name", "is required", id="no-name"),
        pytest.param({**job_manifest(), "spec": None}, "spec", "is required", id="no-spec"),
        pytest.param({**job_manifest(), "kind": "Queue"}, "kind", "must be Job for a Job", id="wrong-kind"),
        pytest.param({**job_manifest(), "extra": 1}, "extra", "unknown field", id="unknown-top-level"),
        pytest.param(
            {**job_manifest(), "metadata": {"name": "a", "labels": {"team": 7}}},
            "metadata.labels.team",
            "must be a string",
            id="label-number",
        ),
    ],
)
def test_schema_error_names_the_path(doc: dict[str, Any], path: str, rule_part: str) -> None:
    error = parse_error(doc)
    assert has_error(error, path, rule_part), messages(error)


def test_fields_the_job_level_allows_are_not_reported() -> None:
    doc = job_manifest(runningEstimate="1h", tasks=[task_manifest(topologyPolicy="none")])
    assert parse_job(doc).name == "train"


def test_all_errors_are_collected_into_one() -> None:
    doc = job_manifest(
        minAvaliable=2, queue=5, tasks=[task_manifest(replicas="x"), task_manifest(name="b", replicas=-1)]
    )
    error = parse_error(doc)
    assert [e.path for e in error.errors] == ["spec.minAvaliable", "spec.tasks[0].replicas", "spec.queue"]
    assert str(error) == "job.yaml: spec.minAvaliable: unknown field (did you mean minAvailable?) (and 2 more)"


def test_quantity_errors_name_the_resource() -> None:
    container = container_manifest(
        resources={"requests": {"cpu": "1x", "memory": "lots"}, "limits": {"nvidia.com/gpu": -1}}
    )
    error = parse_error(job_manifest(tasks=[task_manifest(containers=[container])]))
    base = "spec.tasks[0].template.spec.containers[0].resources"
    assert has_error(error, f"{base}.requests.cpu", "'1x'"), messages(error)
    assert has_error(error, f"{base}.requests.memory", "'lots' is not a quantity"), messages(error)
    assert has_error(error, f"{base}.limits.nvidia.com/gpu", "must not be negative"), messages(error)


def test_non_mapping_document_is_an_error_not_a_traceback() -> None:
    with pytest.raises(ValidationError, match="a Job manifest must be a mapping, not a list"):
        parse_job(["not", "a", "job"], "job.yaml")  # type: ignore[arg-type]
