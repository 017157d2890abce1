"""`paddle`: the parameter-server and collective variables Paddle's role maker and launcher read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from caldera.controller.frameworks import PluginError
from caldera.core.addresses import Addresses, DnsAddresses
from caldera.core.elastic import max_key
from caldera.core.manifest import load_objects
from caldera.core.objects import Job
from caldera.core.podspec import EnvVar

from .builders import PortPool, make_job, make_task, render_all, render_pod

FIXTURES = Path(__file__).parent.parent / "fixtures"


def ctr_job(name: str = "ctr") -> Job:
    return make_job(
        name=name,
        tasks=[make_task(name="pserver", replicas=2), make_task(name="trainer", replicas=2)],
        plugins={"paddle": ["--pserver=pserver", "--trainer=trainer"]},
    )


def collective_job(name: str = "resnet") -> Job:
    return make_job(name=name, tasks=[make_task(name="trainer", replicas=4, gpus=1)], plugins={"paddle": []})


def addresses_for(kind: str, job: Job) -> Addresses:
    return DnsAddresses(job.name) if kind == "dns" else PortPool(first=40000).addresses(job)


def ps_role(env: Mapping[str, str]) -> tuple[str, int, str]:
    """(role, id, endpoint) as `role_maker.PaddleCloudRoleMaker._ps_env` derives them, failing as it would."""
    servers = env["PADDLE_PSERVERS_IP_PORT_LIST"].split(",")
    trainers = env.get("PADDLE_TRAINER_ENDPOINTS", "").split(",")
    assert int(env["PADDLE_TRAINERS_NUM"]) == len(trainers)
    role = env["TRAINING_ROLE"]
    if role == "TRAINER":
        index = int(env["PADDLE_TRAINER_ID"])
        return role, index, trainers[index]
    assert role == "PSERVER"
    endpoint = env["POD_IP"] + ":" + env["PADDLE_PORT"]
    return role, servers.index(endpoint), endpoint  # ValueError, as Paddle, if the server is not listed


def test_exact_parameter_server_variables_on_kubernetes() -> None:
    env = render_pod(ctr_job(), "pserver", 1, DnsAddresses("ctr")).env
    assert env == {
        "POD_IP": "ctr-pserver-1.ctr",
        "PADDLE_PORT": "36543",
        "PADDLE_PSERVERS_IP_PORT_LIST": "ctr-pserver-0.ctr:36543,ctr-pserver-1.ctr:36543",
        "PADDLE_TRAINER_ENDPOINTS": "ctr-trainer-0.ctr:36543,ctr-trainer-1.ctr:36543",
        "PADDLE_TRAINERS_NUM": "2",
        "PADDLE_TRAINER_ID": "1",
        "TRAINING_ROLE": "PSERVER",
        "PADDLE_TRAINING_ROLE": "PSERVER",
        "PYTHONUNBUFFERED": "1",
    }


def test_parameter_server_variables_on_the_embedded_cluster() -> None:
    job = ctr_job()
    patches = render_all(job, PortPool(first=40000).addresses(job))
    servers = "127.0.0.1:40000,127.0.0.1:40001"
    trainers = "127.0.0.1:40002,127.0.0.1:40003"
    for pod, port, role, index in [
        ("ctr-pserver-0", "40000", "PSERVER", "0"),
        ("ctr-pserver-1", "40001", "PSERVER", "1"),
        ("ctr-trainer-0", "40002", "TRAINER", "0"),
        ("ctr-trainer-1", "40003", "TRAINER", "1"),
    ]:
        env = patches[pod].env
        assert env["PADDLE_PSERVERS_IP_PORT_LIST"] == servers, pod
        assert env["PADDLE_TRAINER_ENDPOINTS"] == trainers, pod
        assert (env["POD_IP"], env["PADDLE_PORT"]) == ("127.0.0.1", port), pod
        assert (env["TRAINING_ROLE"], env["PADDLE_TRAINING_ROLE"], env["PADDLE_TRAINER_ID"]) == (role, role, index)


@pytest.mark.parametrize("kind", ["dns", "mapped"], ids=["kubernetes", "embedded"])
def test_role_maker_finds_every_pods_role_and_id(kind: str) -> None:
    job = ctr_job()
    addresses = addresses_for(kind, job)
    for pod, patch in render_all(job, addresses).items():
        role, index, endpoint = ps_role(patch.env)
        task, i = pod.removeprefix("ctr-").rsplit("-", 1)
        assert (role, index) == ({"pserver": "PSERVER", "trainer": "TRAINER"}[task], int(i)), pod
        assert endpoint == f"{addresses.host(pod)}:{addresses.port(pod, 36543)}", pod


def test_the_ctr_manifest_with_the_paddle_plugin() -> None:
    (job,) = load_objects((FIXTURES / "ctr-volcano.yaml").read_text(), "ctr-volcano.yaml")
    assert isinstance(job, Job)
    job.spec = replace(job.spec, plugins={"paddle": (), "env": (), "svc": ()})
    addresses = PortPool(first=40000).addresses(job)
    patches = render_all(job, addresses)
    assert sorted(patches) == [f"ctr-volcano-{t}-{i}" for t in ("pserver", "trainer") for i in (0, 1)]
    roles = {pod: ps_role(p.env)[:2] for pod, p in patches.items()}
    assert roles == {
        "ctr-volcano-pserver-0": ("PSERVER", 0),
        "ctr-volcano-pserver-1": ("PSERVER", 1),
        "ctr-volcano-trainer-0": ("TRAINER", 0),
        "ctr-volcano-trainer-1": ("TRAINER", 1),
    }
    # The manifest's own PADDLE_PORT=30236 would make both pservers of one host collide; ours differ.
    assert len({p.env["PADDLE_PORT"] for p in patches.values()}) == 4


def test_exact_collective_variables_on_kubernetes() -> None:
    env = render_pod(collective_job(), "trainer", 2, DnsAddresses("resnet")).env
    endpoints = ",".join(f"resnet-trainer-{i}.resnet:36543" for i in range(4))
    assert env == {
        "POD_IP": "resnet-trainer-2.resnet",
        "PADDLE_PORT": "36543",
        "PADDLE_TRAINER_ENDPOINTS": endpoints,
        "PADDLE_CURRENT_ENDPOINT": "resnet-trainer-2.resnet:36543",
        "PADDLE_TRAINERS_NUM": "4",
        "PADDLE_TRAINER_ID": "2",
        "TRAINING_ROLE": "TRAINER",
        "PADDLE_TRAINING_ROLE": "TRAINER",
        "PADDLE_RANK_IN_NODE": "0",
        "PADDLE_MASTER": "resnet-trainer-0.resnet:36543",
        "PADDLE_NNODES": "4",
        "PADDLE_JOB_ID": "resnet",
        "PYTHONUNBUFFERED": "1",
    }


def test_collective_pods_without_gpus_use_gloo_as_paddles_launcher_sets_it() -> None:
    """`paddle.distributed.launch` sets PADDLE_DISTRI_BACKEND=gloo when it selects no device; with a GPU it does not."""
    cpu_job = make_job(name="cpu", tasks=[make_task(name="trainer", replicas=2)], plugins={"paddle": []})
    for i in range(2):
        assert render_pod(cpu_job, "trainer", i, DnsAddresses("cpu")).env["PADDLE_DISTRI_BACKEND"] == "gloo"
    assert "PADDLE_DISTRI_BACKEND" not in render_pod(collective_job(), "trainer", 0, DnsAddresses("resnet")).env
    ps = render_all(ctr_job(), DnsAddresses("ctr"))
    assert all("PADDLE_DISTRI_BACKEND" not in patch.env for patch in ps.values())  # parameter-server mode: not set


def test_a_container_that_chooses_its_backend_keeps_it() -> None:
    task = make_task(name="trainer", replicas=2)
    container = replace(task.template.spec.containers[0], env=(EnvVar(name="PADDLE_DISTRI_BACKEND", value="xccl"),))
    task = replace(task, template=replace(task.template, spec=replace(task.template.spec, containers=(container,))))
    job = make_job(name="own", tasks=[task], plugins={"paddle": []})
    assert "PADDLE_DISTRI_BACKEND" not in render_pod(job, "trainer", 0, DnsAddresses("own")).env


def test_collective_on_the_embedded_cluster() -> None:
    job = collective_job()
    patches = render_all(job, PortPool(first=40000).addresses(job))
    endpoints = [f"127.0.0.1:{40000 + i}" for i in range(4)]
    for i in range(4):
        env = patches[f"resnet-trainer-{i}"].env
        assert (env["PADDLE_TRAINER_ID"], env["PADDLE_TRAINERS_NUM"]) == (str(i), "4")
        assert (env["POD_IP"], env["PADDLE_PORT"]) == ("127.0.0.1", str(40000 + i))
        assert env["PADDLE_CURRENT_ENDPOINT"] == endpoints[i]
        # paddle.distributed.launch: the rendezvous at trainer 0, four nodes (init_parallel_env's store too).
        assert (env["PADDLE_MASTER"], env["PADDLE_NNODES"], env["PADDLE_JOB_ID"]) == (endpoints[0], "4", "resnet")
        # All four share a host: Paddle's launcher would read the trainer list as one node of four
        # processes (nnodes = its distinct hosts) and every pod would train alone.
        assert "PADDLE_TRAINER_ENDPOINTS" not in env


def launcher_nodes(env: Mapping[str, str]) -> tuple[str | None, int]:
    """(master, nnodes) as paddle.distributed.launch derives them: PADDLE_MASTER and PADDLE_NNODES,
    then PADDLE_TRAINER_ENDPOINTS, when present, overrides both (its first entry, its distinct hosts)."""
    master, nnodes = env.get("PADDLE_MASTER"), int(env.get("PADDLE_NNODES", "1"))
    if "PADDLE_TRAINER_ENDPOINTS" in env:
        endpoints = env["PADDLE_TRAINER_ENDPOINTS"].split(",")
        master, nnodes = endpoints[0], len({e.split(":")[0] for e in endpoints})
    return master, nnodes


@pytest.mark.parametrize("kind", ["dns", "mapped"], ids=["kubernetes", "embedded"])
def test_paddles_launcher_sees_one_node_per_trainer_pod(kind: str) -> None:
    job = collective_job()
    addresses = addresses_for(kind, job)
    master = f"{addresses.host('resnet-trainer-0')}:{addresses.port('resnet-trainer-0', 36543)}"
    for pod, patch in render_all(job, addresses).items():
        assert launcher_nodes(patch.env) == (master, 4), pod


def test_an_elastic_task_leaves_the_launchers_group_to_etcd() -> None:
    job = collective_job("el")
    job.metadata.annotations[max_key("trainer")] = "6"  # elastic: 4 now, up to 6
    env = render_pod(job, "trainer", 1, DnsAddresses("el")).env
    # PADDLE_MASTER/NNODES/JOB_ID would override `--master etcd://... --nnodes MIN:MAX --job_id`.
    assert not {"PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_JOB_ID"} & set(env)
    assert (env["PADDLE_TRAINER_ID"], env["PADDLE_CURRENT_ENDPOINT"]) == ("1", "el-trainer-1.el:36543")


def test_renamed_tasks_and_port() -> None:
    job = make_job(
        name="ctr",
        tasks=[make_task(name="ps"), make_task(name="worker")],
        plugins={"paddle": ["--pserver=ps", "--trainer=worker", "--port=6170"]},
    )
    env = render_pod(job, "ps", 0, DnsAddresses("ctr")).env
    assert env["PADDLE_PSERVERS_IP_PORT_LIST"] == "ctr-ps-0.ctr:6170"
    assert env["PADDLE_TRAINER_ENDPOINTS"] == "ctr-worker-0.ctr:6170"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param((), 'job "j" has no trainer task "trainer"', id="no-trainer"),
        pytest.param(("--pserver=ps",), "--pserver=ps names no task", id="named-pserver-missing"),
    ],
)
def test_refused(args: tuple[str, ...], message: str) -> None:
    job = make_job(name="j", tasks=[make_task(name="worker")], plugins={"paddle": list(args)})
    with pytest.raises(PluginError, match=message):
        render_pod(job, "worker", 0, DnsAddresses("j"))
