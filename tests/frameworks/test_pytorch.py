"""`pytorch`: MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK for a master and its workers."""

from __future__ import annotations

import pytest

from caldera.controller.frameworks import PluginError
from caldera.core.addresses import Addresses, DnsAddresses
from caldera.core.objects import Job

from .builders import PortPool, make_job, make_task, render_all, render_pod

RANK_VARS = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")


def ddp_job(name: str = "mnist") -> Job:
    return make_job(
        name=name,
        tasks=[make_task(name="master", replicas=1), make_task(name="worker", replicas=2)],
        plugins={"pytorch": ["--master=master", "--worker=worker", "--port=23456"]},
    )


def addresses_for(kind: str, job: Job) -> Addresses:
    return DnsAddresses(job.name) if kind == "dns" else PortPool(first=40000).addresses(job)


@pytest.mark.parametrize(
    ("kind", "addr", "port"),
    [
        pytest.param("dns", "mnist-master-0.mnist", "23456", id="kubernetes"),
        pytest.param("mapped", "127.0.0.1", "40000", id="embedded"),
    ],
)
def test_master_and_workers(kind: str, addr: str, port: str) -> None:
    job = ddp_job()
    patches = render_all(job, addresses_for(kind, job))
    got = {pod: tuple(p.env[v] for v in RANK_VARS) for pod, p in patches.items()}
    assert got == {
        "mnist-master-0": (addr, port, "3", "0"),
        "mnist-worker-0": (addr, port, "3", "1"),
        "mnist-worker-1": (addr, port, "3", "2"),
    }


def test_the_exact_variables_of_a_worker() -> None:
    job = ddp_job()
    assert render_pod(job, "worker", 1, DnsAddresses("mnist")).env == {
        "MASTER_ADDR": "mnist-master-0.mnist",
        "MASTER_PORT": "23456",
        "WORLD_SIZE": "3",
        "RANK": "2",
        # torchrun's flag defaults, so `torchrun --nproc-per-node N` needs no rendezvous flags
        "PET_MASTER_ADDR": "mnist-master-0.mnist",
        "PET_MASTER_PORT": "23456",
        "PET_NNODES": "3",
        "PET_NODE_RANK": "2",
        # torchrun's --rdzv-endpoint: c10d rendezvous at the master too (static reads it first as well)
        "PET_RDZV_ENDPOINT": "mnist-master-0.mnist:23456",
        "PYTHONUNBUFFERED": "1",
    }


@pytest.mark.parametrize("kind", ["dns", "mapped"], ids=["kubernetes", "embedded"])
def test_every_pod_names_the_same_rendezvous_endpoint_the_masters(kind: str) -> None:
    job = ddp_job()
    patches = render_all(job, addresses_for(kind, job))
    endpoints = {p.env["PET_RDZV_ENDPOINT"] for p in patches.values()}
    master = patches["mnist-master-0"].env
    assert endpoints == {f"{master['MASTER_ADDR']}:{master['MASTER_PORT']}"}


def test_defaults_and_another_port() -> None:
    job = make_job(
        name="j",
        tasks=[make_task(name="master"), make_task(name="worker", replicas=1)],
        plugins={"pytorch": ["--port=29500"]},
    )
    env = render_pod(job, "worker", 0, DnsAddresses("j")).env
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["RANK"]) == ("j-master-0.j", "29500", "1")


def test_renamed_tasks() -> None:
    job = make_job(
        name="j",
        tasks=[make_task(name="chief"), make_task(name="trainer", replicas=2)],
        plugins={"pytorch": ["--master=chief", "--worker=trainer"]},
    )
    env = render_pod(job, "trainer", 1, DnsAddresses("j")).env
    assert (env["MASTER_ADDR"], env["WORLD_SIZE"], env["RANK"]) == ("j-chief-0.j", "3", "2")


@pytest.mark.parametrize(
    ("kind", "addr", "port"),
    [
        pytest.param("dns", "ddp-worker-0.ddp", "23456", id="kubernetes"),
        pytest.param("mapped", "127.0.0.1", "40000", id="embedded"),
    ],
)
def test_a_worker_only_job_makes_worker_0_the_master(kind: str, addr: str, port: str) -> None:
    # Arena's `submit pytorch --workers 3`: the workers count the master.
    job = make_job(name="ddp", tasks=[make_task(name="worker", replicas=3)], plugins={"pytorch": []})
    patches = render_all(job, addresses_for(kind, job))
    got = {pod: tuple(p.env[v] for v in RANK_VARS) for pod, p in patches.items()}
    assert got == {
        "ddp-worker-0": (addr, port, "3", "0"),
        "ddp-worker-1": (addr, port, "3", "1"),
        "ddp-worker-2": (addr, port, "3", "2"),
    }


def test_a_master_without_workers_is_a_world_of_one() -> None:
    job = make_job(name="j", tasks=[make_task(name="master")], plugins={"pytorch": []})
    env = render_pod(job, "master", 0, DnsAddresses("j")).env
    assert (env["WORLD_SIZE"], env["RANK"]) == ("1", "0")


def test_other_tasks_get_nothing() -> None:
    job = make_job(
        name="j",
        tasks=[make_task(name="master"), make_task(name="worker"), make_task(name="tensorboard")],
        plugins={"pytorch": []},
    )
    assert render_pod(job, "tensorboard", 0, DnsAddresses("j")).env == {"PYTHONUNBUFFERED": "1"}


@pytest.mark.parametrize("replicas", [0, 2])
def test_exactly_one_master(replicas: int) -> None:
    job = make_job(
        name="j", tasks=[make_task(name="master", replicas=replicas), make_task(name="worker")], plugins={"pytorch": []}
    )
    with pytest.raises(PluginError, match=rf'the master task "master" has {replicas} replicas; it must have exactly 1'):
        render_pod(job, "worker", 0, DnsAddresses("j"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param((), 'job "j" has neither a master nor a worker task', id="no-role-task"),
        pytest.param(("--master=boss",), 'pytorch plugin: --master=boss names no task of job "j"', id="named-missing"),
    ],
)
def test_refused_role_tasks(args: tuple[str, ...], message: str) -> None:
    job = make_job(name="j", tasks=[make_task(name="trainer")], plugins={"pytorch": list(args)})
    with pytest.raises(PluginError, match=message):
        render_pod(job, "trainer", 0, DnsAddresses("j"))
