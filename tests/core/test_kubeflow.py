"""Kubeflow's TFJob, PyTorchJob, MPIJob and PaddleJob, read as the training-operator defines them and run as Volcano Jobs.

The environment each pod gets is checked against what the operator (release 1.9) sets,
rendered through caldera's `kubeflow` plugin with the embedded cluster's addresses.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from caldera.controller.frameworks import job_ports, render
from caldera.core.addresses import MappedAddresses
from caldera.core.errors import ValidationError
from caldera.core.kubeflow import RETRYABLE_EXIT_CODES, to_volcano, warnings
from caldera.core.manifest import load_objects, parse_object
from caldera.core.objects import Job

SEED = Path(__file__).parents[1] / "fixtures" / "kubeflow-tfjob-seed.yaml"


def replica(command: list[str], *, container: str, replicas: int | None = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": [{"name": container, "command": command}]}}, **extra}
    if replicas is not None:
        spec["replicas"] = replicas
    return spec


def kubeflow(kind: str, specs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    field = {"TFJob": "tfReplicaSpecs", "PyTorchJob": "pytorchReplicaSpecs", "MPIJob": "mpiReplicaSpecs"}.get(
        kind, "paddleReplicaSpecs"
    )
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": "kf", "labels": {"team": "a"}},
        "spec": {field: specs, **spec},
    }


def parsed(doc: dict[str, Any]) -> Job:
    job = parse_object(doc, "kf.yaml")
    assert isinstance(job, Job)
    return job


def envs(job: Job) -> dict[str, dict[str, str]]:
    """Every pod's plugin environment but the svc plugin's VC_* hosts, with host ports 40000, 40001, ... in pod order."""
    ports = {key: 40000 + i for i, key in enumerate(job_ports(job))}
    addresses = MappedAddresses("127.0.0.1", ports)
    return {
        f"{job.name}-{t.name}-{i}": {
            k: v for k, v in render(job, t, i, addresses, pod_dir="/pods/p").env.items() if not k.startswith("VC_")
        }
        for t in job.spec.tasks
        for i in range(t.replicas)
    }


def policies(job: Job, task: str) -> list[tuple[str, tuple[str, ...], int | None]]:
    t = job.spec.task(task)
    assert t is not None
    return [(p.action, p.events, p.exit_code) for p in t.policies]


# ---------------------------------------------------------------- TFJob


def test_the_seed_tfjob_runs_as_a_volcano_job_of_its_replicas() -> None:
    (job,) = load_objects(SEED.read_text(), "seed.yaml")
    assert isinstance(job, Job)
    assert [(t.name, t.replicas) for t in job.spec.tasks] == [("chief", 1), ("ps", 1), ("worker", 1)]
    assert (job.spec.min_available, job.spec.queue, job.spec.scheduler_name) == (3, "default", "volcano")
    assert job.metadata.labels["volcano.sh/job-type"] == "TFJob"
    assert job.metadata.annotations["caldera.dev/applied-as"] == "kubeflow.org/v1/TFJob"
    assert dict(job.spec.plugins) == {"kubeflow": ("--kind=TFJob",), "svc": ()}
    chief = job.spec.task("chief")
    assert chief is not None
    (container,) = chief.template.spec.containers
    assert container.name == "tensorflow" and [(p.name, p.container_port) for p in container.ports] == [
        ("tfjob-port", 2222)
    ]
    # The replica's restartPolicy (TF's default, Never) replaces the template's OnFailure, as the operator does.
    assert {t.template.spec.restart_policy for t in job.spec.tasks} == {"Never"}
    assert policies(job, "chief") == [("TerminateJob", ("PodFailed",), None), ("CompleteJob", ("TaskCompleted",), None)]
    assert policies(job, "ps") == [("TerminateJob", ("PodFailed",), None)]
    assert len(warnings(yaml.safe_load(SEED.read_text()))) == 3


def test_tf_config_is_the_operators() -> None:
    (job,) = load_objects(SEED.read_text(), "seed.yaml")
    assert isinstance(job, Job)
    env = envs(job)
    cluster = {"chief": ["127.0.0.1:40000"], "ps": ["127.0.0.1:40001"], "worker": ["127.0.0.1:40002"]}
    for pod, (role, index) in {
        "mnist-train-chief-0": ("chief", 0),
        "mnist-train-ps-0": ("ps", 0),
        "mnist-train-worker-0": ("worker", 0),
    }.items():
        expected = {"cluster": cluster, "task": {"type": role, "index": index}, "environment": "cloud"}
        assert env[pod]["TF_CONFIG"] == json.dumps(expected, separators=(",", ":"))
        assert env[pod]["PYTHONUNBUFFERED"] == "1"


def test_the_evaluator_is_not_in_the_cluster_and_one_replica_gets_no_tf_config() -> None:
    doc = kubeflow(
        "TFJob",
        {
            "Worker": replica(["python", "t.py"], container="tensorflow", replicas=2),
            "Evaluator": replica(["python", "e.py"], container="tensorflow"),
        },
    )
    env = envs(parsed(doc))
    config = json.loads(env["kf-evaluator-0"]["TF_CONFIG"])
    assert config["cluster"] == {"worker": ["127.0.0.1:40000", "127.0.0.1:40001"]}
    assert config["task"] == {"type": "evaluator", "index": 0}
    # Without a chief the workers complete the job (TaskCompleted: all of them).
    assert policies(parsed(doc), "worker")[-1] == ("CompleteJob", ("TaskCompleted",), None)
    alone = kubeflow("TFJob", {"Worker": replica(["python", "t.py"], container="tensorflow")})
    assert "TF_CONFIG" not in envs(parsed(alone))["kf-worker-0"]


def test_a_named_port_is_the_one_in_tf_config() -> None:
    worker = replica(["python", "t.py"], container="tensorflow", replicas=2)
    worker["template"]["spec"]["containers"][0]["ports"] = [{"name": "tfjob-port", "containerPort": 3333}]
    job = parsed(kubeflow("TFJob", {"Worker": worker}))
    assert {port for _, port in job_ports(job)} == {3333}


# ---------------------------------------------------------------- PyTorchJob


def pytorch_job(**spec: Any) -> dict[str, Any]:
    return kubeflow(
        "PyTorchJob",
        {
            "Master": replica(["python", "train.py"], container="pytorch", replicas=1),
            "Worker": replica(["python", "train.py"], container="pytorch", replicas=2),
        },
        **spec,
    )


def test_pytorch_env_is_the_operators() -> None:
    job = parsed(pytorch_job())
    env = envs(job)
    master = "127.0.0.1", "40000"
    for pod, rank in (("kf-master-0", 0), ("kf-worker-0", 1), ("kf-worker-1", 2)):
        assert env[pod] == {
            "PYTHONUNBUFFERED": "1",
            "PET_NNODES": "3",
            "MASTER_ADDR": master[0],
            "MASTER_PORT": master[1],
            "PET_MASTER_ADDR": master[0],
            "PET_MASTER_PORT": master[1],
            "WORLD_SIZE": "3",
            "RANK": str(rank),
            "PET_NPROC_PER_NODE": "auto",
            "PET_NODE_RANK": str(rank),
        }
    assert {t.template.spec.restart_policy for t in job.spec.tasks} == {"OnFailure"}  # PyTorch's default
    assert policies(job, "master") == [("CompleteJob", ("TaskCompleted",), None)]
    assert policies(job, "worker") == []


def test_pytorch_world_size_counts_processes_when_nproc_per_node_is_a_number() -> None:
    env = envs(parsed(pytorch_job(nprocPerNode="2")))
    assert (env["kf-worker-1"]["WORLD_SIZE"], env["kf-worker-1"]["PET_NPROC_PER_NODE"]) == ("6", "2")


def test_a_worker_only_pytorch_job_gets_only_pet_nnodes() -> None:
    doc = kubeflow("PyTorchJob", {"Worker": replica(["python", "t.py"], container="pytorch", replicas=2)})
    env = envs(parsed(doc))
    assert env["kf-worker-1"] == {"PYTHONUNBUFFERED": "1", "PET_NNODES": "2"}


def test_the_gang_queue_priority_and_ttl_come_from_the_run_policy() -> None:
    run_policy = {
        "ttlSecondsAfterFinished": 60,
        "cleanPodPolicy": "Running",
        "schedulingPolicy": {"minAvailable": 2, "queue": "research", "priorityClass": "high"},
    }
    job = parsed(pytorch_job(runPolicy=run_policy))
    assert (job.spec.min_available, job.spec.queue, job.spec.priority_class_name) == (2, "research", "high")
    assert job.spec.ttl_seconds_after_finished == 60


# ---------------------------------------------------------------- restart policies


@pytest.mark.parametrize(
    ("restart", "backoff", "pod_restart", "expected"),
    [
        pytest.param("OnFailure", None, "OnFailure", [], id="on-failure-in-place"),
        pytest.param("Always", None, "Always", [], id="always-in-place"),
        pytest.param("Never", None, "Never", [("TerminateJob", ("PodFailed",), None)], id="never-ends-the-job"),
        pytest.param("Never", 3, "Never", [("TerminateJob", ("PodFailed",), None)], id="never-ignores-backoff"),
        pytest.param("OnFailure", 2, "Never", [("RestartJob", ("PodFailed",), None)], id="backoff-restarts-the-job"),
        pytest.param("OnFailure", 0, "Never", [("TerminateJob", ("PodFailed",), None)], id="backoff-0"),
    ],
)
def test_restart_policies(restart: str, backoff: int | None, pod_restart: str, expected: list[Any]) -> None:
    doc = kubeflow("PyTorchJob", {"Worker": replica(["t"], container="pytorch", restartPolicy=restart)})
    if backoff is not None:
        doc["spec"]["runPolicy"] = {"backoffLimit": backoff}
    job = parsed(doc)
    (task,) = job.spec.tasks
    assert task.template.spec.restart_policy == pod_restart
    assert policies(job, "worker") == expected
    assert job.spec.max_retry == (backoff or 3)


def test_exit_code_re_creates_a_pod_on_a_retryable_code_and_ends_the_job_on_others() -> None:
    doc = kubeflow("PyTorchJob", {"Worker": replica(["t"], container="pytorch", restartPolicy="ExitCode")})
    got = policies(parsed(doc), "worker")
    assert got[:-1] == [("RestartPod", (), code) for code in RETRYABLE_EXIT_CODES]
    assert got[-1] == ("TerminateJob", ("PodFailed",), None)


# ---------------------------------------------------------------- PaddleJob and MPIJob


def test_paddle_collective_and_parameter_server_env() -> None:
    collective = envs(parsed(kubeflow("PaddleJob", {"Worker": replica(["t"], container="paddle", replicas=2)})))
    assert collective["kf-worker-0"] == {
        "PYTHONUNBUFFERED": "1",
        "PADDLE_JOB_ID": "kf",
        "PADDLE_NNODES": "2",
        "PADDLE_MASTER": "127.0.0.1:40000",
        "POD_IP_DUMMY": "127.0.0.1",
    }
    assert (
        collective["kf-worker-1"]["PADDLE_MASTER"] == "127.0.0.1:40000"
        and "POD_IP_DUMMY" not in collective["kf-worker-1"]
    )
    ps = parsed(
        kubeflow(
            "PaddleJob",
            {"Master": replica(["t"], container="paddle"), "Worker": replica(["t"], container="paddle", replicas=2)},
        )
    )
    env = envs(ps)
    assert env["kf-master-0"]["PADDLE_SERVER_NUM"] == "1" and "PADDLE_TRAINER_NUM" not in env["kf-master-0"]
    assert env["kf-worker-1"]["PADDLE_TRAINER_NUM"] == "1" and env["kf-worker-1"]["PADDLE_MASTER"] == "127.0.0.1:40000"
    assert env["kf-worker-1"]["PADDLE_NNODES"] == "3"
    assert policies(ps, "master") == [("CompleteJob", ("TaskCompleted",), None)]


def test_mpi_hostfile_slots_and_default_worker_command() -> None:
    doc = kubeflow(
        "MPIJob",
        {
            "Launcher": replica(["mpirun", "-np", "4", "python", "t.py"], container="launcher"),
            "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "w", "image": "x"}]}}},
        },
        slotsPerWorker=2,
    )
    job = parsed(doc)
    worker = job.spec.task("worker")
    assert worker is not None and (
        worker.template.spec.containers[0].command,
        worker.template.spec.containers[0].args,
    ) == (
        ("sleep",),
        ("365d",),
    )
    ports = {key: 40000 + i for i, key in enumerate(job_ports(job))}
    launcher = job.spec.task("launcher")
    assert launcher is not None
    patch = render(job, launcher, 0, MappedAddresses("127.0.0.1", ports), pod_dir="/pods/l")
    assert patch.files["etc/mpi/hostfile"] == "127.0.0.1 slots=2\n127.0.0.1 slots=2\n"
    assert patch.env["OMPI_MCA_orte_default_hostfile"] == "/pods/l/etc/mpi/hostfile"
    assert patch.env["NVIDIA_VISIBLE_DEVICES"] == ""
    assert dict(job.spec.plugins) == {"kubeflow": ("--kind=MPIJob", "--slots=2"), "svc": (), "ssh": ()}
    assert policies(job, "launcher")[-1] == ("CompleteJob", ("TaskCompleted",), None)


def test_an_mpijob_worker_defaults_to_no_replicas() -> None:
    doc = kubeflow("MPIJob", {"Launcher": replica(["mpirun"], container="l"), "Worker": replica(["w"], container="w")})
    worker = parsed(doc).spec.task("worker")
    assert worker is not None and worker.replicas == 0


# ---------------------------------------------------------------- bad input


def one(doc: dict[str, Any], change: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    change(doc)
    return doc


@pytest.mark.parametrize(
    ("change", "path", "rule"),
    [
        pytest.param(
            lambda d: d["spec"]["pytorchReplicaSpecs"].update(Launcher=d["spec"]["pytorchReplicaSpecs"]["Master"]),
            "spec.pytorchReplicaSpecs.Launcher",
            "unknown replica type; a PyTorchJob has Master, Worker",
            id="unknown-type",
        ),
        pytest.param(
            lambda d: d["spec"]["pytorchReplicaSpecs"]["Master"].update(replicas=2),
            "spec.pytorchReplicaSpecs.Master.replicas",
            "must be 1: a PyTorchJob has one Master",
            id="two-masters",
        ),
        pytest.param(
            lambda d: d["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(name="x"),
            "spec.pytorchReplicaSpecs.Worker.template.spec.containers",
            'must have a container named "pytorch"',
            id="no-pytorch-container",
        ),
        pytest.param(
            lambda d: d["spec"].update(elasticPolicy={"minReplicas": 1}),
            "spec.elasticPolicy",
            "is not supported by caldera",
            id="elastic",
        ),
        pytest.param(
            lambda d: d["spec"].update(runPolicy={"activeDeadlineSeconds": 60}),
            "spec.runPolicy.activeDeadlineSeconds",
            "is not supported by caldera yet",
            id="deadline",
        ),
        pytest.param(
            lambda d: d["spec"].update(runPolicy={"cleanPodPolicy": "Sometimes"}),
            "spec.runPolicy.cleanPodPolicy",
            "'Sometimes' is not one of All, Running, None",
            id="clean-pod-policy",
        ),
        pytest.param(
            lambda d: d["spec"]["pytorchReplicaSpecs"]["Worker"].update(restartPolicy="Maybe"),
            "spec.pytorchReplicaSpecs.Worker.restartPolicy",
            "'Maybe' is not one of Always, OnFailure, Never, ExitCode",
            id="restart-policy",
        ),
        pytest.param(
            lambda d: d["spec"].update(runPolicy={"schedulingPolicy": {"minAvailable": 9}}),
            "spec.runPolicy.schedulingPolicy.minAvailable",
            "9 is more than the 3 replicas of all tasks",
            id="gang-bigger-than-the-job-volcano-rule-kubeflow-path",
        ),
        pytest.param(
            lambda d: d["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(
                resources={"requests": {"cpu": "lots"}}
            ),
            "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resources.requests.cpu",
            "",
            id="pod-template-error-kubeflow-path",
        ),
        pytest.param(
            lambda d: d["metadata"].update(name="9lives"), "metadata.name", "must start with a letter", id="dns-1035"
        ),
        pytest.param(lambda d: d["spec"].update(tfReplicaSpecs={}), "spec.tfReplicaSpecs", "unknown field", id="typo"),
    ],
)
def test_bad_input_names_the_kubeflow_path_and_the_rule(change: Any, path: str, rule: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_object(one(pytorch_job(), change), "kf.yaml")
    assert any(e.path == path and rule in e.rule for e in caught.value.errors), caught.value.errors


def test_the_volcano_manifest_is_what_apply_sends() -> None:
    sent = to_volcano(pytorch_job())
    assert (sent["apiVersion"], sent["kind"]) == ("batch.volcano.sh/v1alpha1", "Job")
    assert sent["metadata"]["labels"] == {"team": "a", "volcano.sh/job-type": "PyTorchJob"}
    assert parse_object(sent).spec == parsed(pytorch_job()).spec  # type: ignore[union-attr]
