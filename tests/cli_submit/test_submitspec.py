"""The pure builders: each framework's Job shape, and every variant accepted by parse_job."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from caldera.cli.submitspec import (
    DATA_ANNOTATION,
    TENSORBOARD_ANNOTATION,
    DataMount,
    SubmitSpec,
    check_quantity,
    command_error,
    mpi_job,
    name_error,
    paddle_job,
    parse_data,
    parse_env,
    parse_workers,
    pytorch_job,
    tensorflow_job,
)
from caldera.core.jobmanifest import parse_job
from caldera.core.validation import validate_job

RESTART_ON_FAILURE = [
    {"event": "PodEvicted", "action": "RestartJob"},
    {"event": "PodFailed", "action": "RestartJob"},
]
COMPLETE_JOB = [{"event": "TaskCompleted", "action": "CompleteJob"}]
CTR = Path(__file__).parents[1] / "fixtures" / "ctr-volcano.yaml"


def make_spec(**fields: Any) -> SubmitSpec:
    defaults: dict[str, Any] = {"name": "train", "command": ("python", "train.py")}
    return SubmitSpec(**{**defaults, **fields})


FULL = make_spec(
    namespace="research",
    image="pytorch/pytorch:2.3",
    gpus=2,
    cpu="4",
    memory="8Gi",
    queue="team-a",
    priority="high",
    env=(("LR", "0.1"), ("EPOCHS", "3")),
    working_dir="/work",
    data=(DataMount("/srv/mnist", "data/mnist"), DataMount("/srv/ckpt", "ckpt")),
    tensorboard_logdir="runs",
    retry=5,
)

VARIANTS: dict[str, Callable[[], dict[str, Any]]] = {
    "pytorch-1": lambda: pytorch_job(make_spec(), workers=1),
    "pytorch-3": lambda: pytorch_job(make_spec(), workers=3),
    "pytorch-elastic-2:4": lambda: pytorch_job(make_spec(), workers=4, min_workers=2, elastic=True),
    "pytorch-elastic-1:1": lambda: pytorch_job(make_spec(), workers=1, min_workers=1, elastic=True),
    "pytorch-elastic-1:3": lambda: pytorch_job(make_spec(), workers=3, min_workers=1, elastic=True),
    "pytorch-every-option": lambda: pytorch_job(FULL, workers=2),
    "tf-workers-only": lambda: tensorflow_job(make_spec(), workers=2),
    "tf-ps": lambda: tensorflow_job(make_spec(), workers=2, ps=1),
    "tf-ps-chief-evaluator": lambda: tensorflow_job(make_spec(), workers=2, ps=2, chief=True, evaluator=True),
    "tf-every-option": lambda: tensorflow_job(FULL, workers=1, ps=1, chief=True),
    "paddle-ps": lambda: paddle_job(make_spec(), trainers=2, pservers=2),
    "paddle-collective": lambda: paddle_job(make_spec(), trainers=3),
    "paddle-every-option": lambda: paddle_job(FULL, trainers=1, pservers=1),
    "mpi": lambda: mpi_job(make_spec(command=("mpirun", "python", "train.py")), workers=2),
    "mpi-worker-command": lambda: mpi_job(make_spec(), workers=1, worker_command=("python", "serve.py")),
    "mpi-every-option": lambda: mpi_job(FULL, workers=3),
}


def tasks(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in manifest["spec"]["tasks"]}


def container(task: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = task["template"]["spec"]["containers"]
    [only] = containers
    return only


# ---------------------------------------------------------------- every variant


@pytest.mark.parametrize("build", VARIANTS.values(), ids=VARIANTS.keys())
def test_every_variant_is_a_valid_volcano_job(build: Callable[[], dict[str, Any]]) -> None:
    manifest = build()
    job = parse_job(manifest)
    assert validate_job(job) == []
    assert manifest["apiVersion"] == "batch.volcano.sh/v1alpha1"
    assert manifest["kind"] == "Job"
    # The dict is plain data: it survives a YAML round trip unchanged.
    assert yaml.safe_load(yaml.safe_dump(manifest)) == manifest


@pytest.mark.parametrize("build", VARIANTS.values(), ids=VARIANTS.keys())
def test_every_variant_restarts_the_whole_job_and_never_a_pod(build: Callable[[], dict[str, Any]]) -> None:
    manifest = build()
    elastic = any(k.startswith("caldera.dev/elastic-max-") for k in manifest["metadata"].get("annotations", {}))
    # An elastic job recovers pod by pod (admission adds RestartPod); every other job restarts whole.
    assert manifest["spec"].get("policies") == (None if elastic else RESTART_ON_FAILURE)
    assert {t["template"]["spec"]["restartPolicy"] for t in manifest["spec"]["tasks"]} == {"Never"}
    assert {"svc", "env"} <= manifest["spec"]["plugins"].keys()


# ---------------------------------------------------------------- pytorch


def test_pytorch_workers_count_the_master() -> None:
    m = pytorch_job(make_spec(), workers=3)
    assert [(t["name"], t["replicas"]) for t in m["spec"]["tasks"]] == [("master", 1), ("worker", 2)]
    assert m["spec"]["minAvailable"] == 3
    assert m["spec"]["plugins"] == {
        "pytorch": ["--master=master", "--worker=worker", "--port=23456"],
        "svc": [],
        "env": [],
    }
    assert {container(t)["name"] for t in m["spec"]["tasks"]} == {"pytorch"}
    assert all(container(t)["command"] == ["python", "train.py"] for t in m["spec"]["tasks"])
    assert all("policies" not in t for t in m["spec"]["tasks"])


def test_pytorch_with_one_worker_is_the_master_alone() -> None:
    m = pytorch_job(make_spec(), workers=1)
    assert [(t["name"], t["replicas"]) for t in m["spec"]["tasks"]] == [("master", 1)]
    assert m["spec"]["minAvailable"] == 1


def test_pytorch_elastic_is_launcher_pods_min_of_max() -> None:
    m = pytorch_job(make_spec(), workers=4, min_workers=2, elastic=True)
    job = parse_job(m)
    assert [(t.name, t.replicas, t.min_available) for t in job.spec.tasks] == [("worker", 4, 2)]
    assert job.spec.min_available == 2
    assert job.metadata.annotations["caldera.dev/elastic-max-worker"] == "4"
    assert "pytorch" not in job.spec.plugins  # the launchers elect rank 0; no fixed master
    (container,) = job.spec.tasks[0].template.spec.containers
    assert container.command[:4] == ("python", "-m", "caldera.launcher", "--")


def test_pytorch_elastic_at_a_fixed_size_is_fault_tolerant() -> None:
    job = parse_job(pytorch_job(make_spec(), workers=3, elastic=True))
    assert [(t.replicas, t.min_available) for t in job.spec.tasks] == [(3, 3)]
    assert job.metadata.annotations["caldera.dev/elastic-max-worker"] == "3"


def test_a_range_needs_elastic() -> None:
    with pytest.raises(ValueError, match="elastic"):
        pytorch_job(make_spec(), workers=4, min_workers=2)


# ---------------------------------------------------------------- tensorflow


def test_tf_with_a_chief_completes_when_the_chief_does() -> None:
    m = tensorflow_job(make_spec(), workers=3, ps=2, chief=True)
    t = tasks(m)
    assert [(n, t[n]["replicas"]) for n in t] == [("ps", 2), ("worker", 3), ("chief", 1)]
    assert m["spec"]["minAvailable"] == 6
    assert m["spec"]["plugins"]["tensorflow"] == ["--ps=ps", "--worker=worker", "--chief=chief", "--port=2222"]
    assert t["chief"]["policies"] == COMPLETE_JOB
    assert "policies" not in t["worker"]
    assert "policies" not in t["ps"]
    assert {container(x)["name"] for x in t.values()} == {"tensorflow"}


def test_tf_without_a_chief_completes_when_the_workers_do() -> None:
    m = tensorflow_job(make_spec(), workers=2, ps=1)
    t = tasks(m)
    assert list(t) == ["ps", "worker"]
    assert t["worker"]["policies"] == COMPLETE_JOB
    assert m["spec"]["plugins"]["tensorflow"] == ["--ps=ps", "--worker=worker", "--port=2222"]


def test_tf_evaluator_and_no_ps() -> None:
    m = tensorflow_job(make_spec(), workers=1, evaluator=True)
    assert list(tasks(m)) == ["worker", "evaluator"]
    assert m["spec"]["plugins"]["tensorflow"] == ["--worker=worker", "--evaluator=evaluator", "--port=2222"]


# ---------------------------------------------------------------- paddle


def test_paddle_parameter_server_mode_has_the_ctr_manifests_lifecycle() -> None:
    m = paddle_job(make_spec(), trainers=2, pservers=2)
    t = tasks(m)
    assert [(n, t[n]["replicas"]) for n in t] == [("pserver", 2), ("trainer", 2)]
    assert m["spec"]["plugins"]["paddle"] == ["--pserver=pserver", "--trainer=trainer", "--port=36543"]
    assert {container(x)["name"] for x in t.values()} == {"paddle"}
    ours, ctr = parse_job(m).spec, parse_job(yaml.safe_load(CTR.read_text())).spec
    assert ours.min_available == ctr.min_available == 4
    assert ours.policies == ctr.policies
    assert [x.policies for x in ours.tasks] == [x.policies for x in ctr.tasks]


def test_paddle_collective_mode_is_trainers_alone() -> None:
    m = paddle_job(make_spec(), trainers=3)
    assert [(t["name"], t["replicas"]) for t in m["spec"]["tasks"]] == [("trainer", 3)]
    assert m["spec"]["plugins"]["paddle"] == ["--trainer=trainer", "--port=36543"]
    assert "policies" not in m["spec"]["tasks"][0]
    assert m["spec"]["minAvailable"] == 3


# ---------------------------------------------------------------- mpi


def test_mpi_launcher_runs_the_command_and_workers_wait() -> None:
    m = mpi_job(make_spec(command=("mpirun", "-np", "4", "python", "train.py")), workers=2)
    t = tasks(m)
    assert [(n, t[n]["replicas"]) for n in t] == [("master", 1), ("worker", 2)]
    assert container(t["master"])["command"] == ["mpirun", "-np", "4", "python", "train.py"]
    assert container(t["worker"])["command"] == ["sleep", "infinity"]
    assert t["master"]["policies"] == COMPLETE_JOB
    assert "policies" not in t["worker"]
    assert m["spec"]["plugins"] == {"mpi": ["--master=master", "--worker=worker"], "ssh": [], "svc": [], "env": []}
    assert m["spec"]["minAvailable"] == 3


def test_mpi_workers_run_the_worker_command_when_given() -> None:
    m = mpi_job(make_spec(), workers=1, worker_command=("python", "serve.py"))
    assert container(tasks(m)["worker"])["command"] == ["python", "serve.py"]


# ---------------------------------------------------------------- common options


GPU_ROLES = [
    pytest.param(lambda s: pytorch_job(s, workers=2), {"master", "worker"}, id="pytorch"),
    pytest.param(lambda s: tensorflow_job(s, workers=1, ps=1, chief=True), {"worker", "chief"}, id="tf"),
    pytest.param(lambda s: paddle_job(s, trainers=1, pservers=1), {"trainer"}, id="paddle"),
    pytest.param(lambda s: mpi_job(s, workers=1), {"worker"}, id="mpi"),
]


@pytest.mark.parametrize(("build", "with_gpus"), GPU_ROLES)
def test_resources_per_pod_and_gpus_only_where_pods_compute(
    build: Callable[[SubmitSpec], dict[str, Any]], with_gpus: set[str]
) -> None:
    for name, task in tasks(build(FULL)).items():
        res = container(task)["resources"]
        if name in with_gpus:
            assert res == {
                "requests": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"},
                "limits": {"nvidia.com/gpu": "2"},
            }
        else:
            assert res == {"requests": {"cpu": "4", "memory": "8Gi"}}


@pytest.mark.parametrize("build", [p.values[0] for p in GPU_ROLES], ids=[p.id for p in GPU_ROLES])
def test_common_options_reach_the_job_and_every_pod(build: Callable[[SubmitSpec], dict[str, Any]]) -> None:
    m = build(FULL)
    kind = {"pytorch": "PyTorchJob", "tensorflow": "TFJob", "paddle": "PaddleJob", "mpi": "MPIJob"}
    assert m["metadata"] == {
        "name": "train",
        "namespace": "research",
        "labels": {"volcano.sh/job-type": kind[container(m["spec"]["tasks"][0])["name"]]},  # list's TYPE
        "annotations": {TENSORBOARD_ANNOTATION: "runs"},
    }
    assert m["spec"]["queue"] == "team-a"
    assert m["spec"]["priorityClassName"] == "high"
    assert m["spec"]["maxRetry"] == 5
    for task in m["spec"]["tasks"]:
        c = container(task)
        assert c["image"] == "pytorch/pytorch:2.3"
        assert c["env"] == [{"name": "LR", "value": "0.1"}, {"name": "EPOCHS", "value": "3"}]
        assert c["workingDir"] == "/work"
        assert task["template"]["metadata"]["annotations"] == {DATA_ANNOTATION: "/srv/mnist:data/mnist,/srv/ckpt:ckpt"}


def test_defaults_write_nothing_optional() -> None:
    m = pytorch_job(make_spec(), workers=1)
    assert m["metadata"] == {"name": "train", "namespace": "default", "labels": {"volcano.sh/job-type": "PyTorchJob"}}
    assert m["spec"].keys() == {"minAvailable", "queue", "policies", "plugins", "tasks"}
    assert m["spec"]["queue"] == "default"
    [task] = m["spec"]["tasks"]
    assert task["template"] == {
        "spec": {"containers": [{"name": "pytorch", "command": ["python", "train.py"]}], "restartPolicy": "Never"}
    }


def test_a_repeated_variable_keeps_its_last_value() -> None:
    m = pytorch_job(make_spec(env=(("A", "1"), ("B", "2"), ("A", "3"))), workers=1)
    assert container(m["spec"]["tasks"][0])["env"] == [{"name": "A", "value": "3"}, {"name": "B", "value": "2"}]


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: pytorch_job(make_spec(), workers=0), id="pytorch-no-workers"),
        pytest.param(lambda: pytorch_job(make_spec(), workers=2, min_workers=3), id="pytorch-min-above-max"),
        pytest.param(lambda: tensorflow_job(make_spec(), workers=0), id="tf-no-workers"),
        pytest.param(lambda: paddle_job(make_spec(), trainers=0, pservers=1), id="paddle-no-trainers"),
        pytest.param(lambda: mpi_job(make_spec(), workers=0), id="mpi-no-workers"),
        pytest.param(lambda: pytorch_job(make_spec(command=()), workers=1), id="no-command"),
        pytest.param(lambda: pytorch_job(make_spec(retry=0), workers=1), id="retry-0"),
        pytest.param(lambda: pytorch_job(make_spec(data=(DataMount("rel", "d"),)), workers=1), id="relative-source"),
    ],
)
def test_builders_refuse_what_no_job_can_mean(build: Callable[[], dict[str, Any]]) -> None:
    with pytest.raises(ValueError):
        build()


# ---------------------------------------------------------------- option text


@pytest.mark.parametrize(
    ("text", "want"),
    [("A=1", ("A", "1")), ("A=", ("A", "")), ("A=b=c", ("A", "b=c")), ("my.var-x_1=v", ("my.var-x_1", "v"))],
)
def test_parse_env(text: str, want: tuple[str, str]) -> None:
    assert parse_env(text) == want


@pytest.mark.parametrize("text", ["FOO", "=1", "1A=x", "A B=x", "É=x"])
def test_parse_env_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_env(text)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("/srv/a:data", DataMount("/srv/a", "data")),
        ("rel:x/./y/", DataMount("rel", "x/y")),
        ("/srv/a:/mnist_data", DataMount("/srv/a", "/mnist_data")),  # Arena's absolute form
    ],
)
def test_parse_data(text: str, want: DataMount) -> None:
    assert parse_data(text) == want


@pytest.mark.parametrize(
    "text", ["/srv/a", "/srv/a:", ":x", "/a:/", "/a:../up", "/a:/x/../..", "/a:.", "/a:b:c", "/a,b:c"]
)
def test_parse_data_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_data(text)


@pytest.mark.parametrize(("text", "want"), [("1", (None, 1)), ("4", (None, 4)), ("2:4", (2, 4)), ("3:3", (3, 3))])
def test_parse_workers(text: str, want: tuple[int | None, int]) -> None:
    assert parse_workers(text) == want


@pytest.mark.parametrize("text", ["0", "-1", "x", "4:2", "0:2", "2:", ":2", "1:2:3"])
def test_parse_workers_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_workers(text)


@pytest.mark.parametrize(("text", "ok"), [("2", True), ("500m", True), ("4Gi", True), ("0", False), ("lots", False)])
def test_check_quantity(text: str, ok: bool) -> None:
    if ok:
        assert check_quantity(text) == text
    else:
        with pytest.raises(ValueError):
            check_quantity(text)


@pytest.mark.parametrize(
    ("command", "ok"),
    [
        (("python", "train.py"), True),
        (("./train",), True),
        (("sh", "-c", "python train.py && echo done"), True),
        ((), False),
        (("python train.py",), False),
    ],
)
def test_command_error(command: tuple[str, ...], ok: bool) -> None:
    assert (command_error(command) is None) is ok


@pytest.mark.parametrize(("name", "ok"), [("ddp", True), ("a" * 49, True), ("a" * 50, False), ("Bad_Name", False)])
def test_name_error(name: str, ok: bool) -> None:
    assert (name_error(name) is None) is ok
