"""The registry: which ports each task needs, rendering every plugin of a job, and two jobs on one host."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from caldera.controller.frameworks import PLUGINS, PluginError, job_ports, ports_of, render
from caldera.controller.frameworks.pod import pod_name as frameworks_pod_name
from caldera.controller.pods import pod_name
from caldera.core.addresses import DnsAddresses
from caldera.core.objects import TaskSpec
from caldera.core.validation import JOB_PLUGINS

from .builders import PortPool, make_job, make_task, render_all, render_pod


def test_the_registry_knows_exactly_the_plugins_validation_accepts() -> None:
    assert set(PLUGINS) == set(JOB_PLUGINS)


def test_pod_names_agree_with_the_controller() -> None:
    assert frameworks_pod_name("j", "worker", 3) == pod_name("j", "worker", 3) == "j-worker-3"


@pytest.mark.parametrize(
    ("tasks", "plugins", "task", "ports"),
    [
        pytest.param(
            [make_task(name="master"), make_task(name="worker")],
            {"pytorch": []},
            "master",
            (23456,),
            id="pytorch-master",
        ),
        pytest.param(
            [make_task(name="master"), make_task(name="worker")],
            {"pytorch": []},
            "worker",
            (23456,),
            id="pytorch-worker",
        ),
        pytest.param(
            [make_task(name="worker", replicas=2)],
            {"pytorch": ["--port=29500"]},
            "worker",
            (29500,),
            id="pytorch-port-flag",
        ),
        pytest.param(
            [make_task(name="master"), make_task(name="worker"), make_task(name="tb")],
            {"pytorch": []},
            "tb",
            (),
            id="pytorch-other-task",
        ),
        pytest.param(
            [make_task(name="master", ports=[8080]), make_task(name="worker")],
            {"pytorch": []},
            "master",
            (8080, 23456),
            id="manifest-first",
        ),
        pytest.param(
            [make_task(name="master", ports=[23456]), make_task(name="worker")],
            {"pytorch": []},
            "master",
            (23456,),
            id="once-each",
        ),
        pytest.param(
            [make_task(name="ps"), make_task(name="worker", replicas=2)],
            {"tensorflow": []},
            "ps",
            (2222,),
            id="tensorflow",
        ),
        pytest.param([make_task(name="worker")], {"tensorflow": []}, "worker", (), id="tensorflow-not-distributed"),
        pytest.param(
            [make_task(name="master"), make_task(name="worker")], {"mpi": [], "ssh": []}, "worker", (22,), id="mpi"
        ),
        pytest.param(
            [make_task(name="pserver"), make_task(name="trainer")],
            {"paddle": []},
            "pserver",
            (36543,),
            id="paddle-pserver",
        ),
        pytest.param(
            [make_task(name="trainer", replicas=4)],
            {"paddle": ["--port=6170"]},
            "trainer",
            (6170,),
            id="paddle-collective",
        ),
        pytest.param([make_task(name="worker", replicas=2)], {"env": [], "svc": []}, "worker", (), id="env-svc"),
        pytest.param([make_task(name="worker", ports=[6006, 8080])], {}, "worker", (6006, 8080), id="manifest-only"),
    ],
)
def test_ports_of(tasks: list[TaskSpec], plugins: dict[str, Sequence[str]], task: str, ports: tuple[int, ...]) -> None:
    job = make_job(name="j", tasks=tasks, plugins=plugins)
    spec = job.spec.task(task)
    assert spec is not None
    assert ports_of(job, spec) == ports


def test_job_ports_lists_every_pod_in_task_and_index_order() -> None:
    job = make_job(
        name="j",
        tasks=[make_task(name="master", ports=[6006]), make_task(name="worker", replicas=2)],
        plugins={"pytorch": []},
    )
    assert job_ports(job) == (
        ("j-master-0", 6006),
        ("j-master-0", 23456),
        ("j-worker-0", 23456),
        ("j-worker-1", 23456),
    )


@pytest.mark.parametrize(
    ("plugins", "unbuffered"),
    [
        pytest.param({"env": [], "svc": []}, False, id="no-framework"),
        pytest.param({"pytorch": []}, True, id="pytorch"),
        pytest.param({"tensorflow": []}, True, id="tensorflow"),
        pytest.param({"paddle": ["--trainer=worker"]}, True, id="paddle"),
        pytest.param({"mpi": ["--master=worker"]}, True, id="mpi"),
    ],
)
def test_pythonunbuffered_with_any_framework(plugins: dict[str, Sequence[str]], unbuffered: bool) -> None:
    job = make_job(name="j", tasks=[make_task(name="worker", replicas=2)], plugins=plugins)
    env = render_pod(job, "worker", 0, DnsAddresses("j")).env
    assert env.get("PYTHONUNBUFFERED") == ("1" if unbuffered else None)


def test_plugins_combine() -> None:
    # What Volcano's webhook makes of `plugins: {pytorch: []}`, plus env.
    job = make_job(
        name="j",
        tasks=[make_task(name="master"), make_task(name="worker", replicas=2)],
        plugins={"pytorch": [], "svc": [], "env": []},
    )
    env = render_pod(job, "worker", 1, DnsAddresses("j")).env
    assert {k: env[k] for k in ("RANK", "VC_TASK_INDEX", "VC_WORKER_NUM", "VC_MASTER_ADDRS")} == {
        "RANK": "2",
        "VC_TASK_INDEX": "1",
        "VC_WORKER_NUM": "2",
        "VC_MASTER_ADDRS": "j-master-0.j:23456",
    }


def test_two_jobs_on_one_host_never_share_a_port() -> None:
    pool = PortPool(first=40000)  # one executor, one host
    a = make_job(
        name="a", tasks=[make_task(name="master"), make_task(name="worker", replicas=2)], plugins={"pytorch": []}
    )
    b = make_job(
        name="b", tasks=[make_task(name="master"), make_task(name="worker", replicas=2)], plugins={"pytorch": []}
    )
    ctr = make_job(
        name="ctr",
        tasks=[make_task(name="pserver", replicas=2), make_task(name="trainer", replicas=2)],
        plugins={"paddle": []},
    )
    masters: set[str] = set()
    listening: list[str] = []
    for job in (a, b, ctr):
        for patch in render_all(job, pool.addresses(job)).values():
            if "MASTER_ADDR" in patch.env:
                masters.add(f"{patch.env['MASTER_ADDR']}:{patch.env['MASTER_PORT']}")
            if "PADDLE_PORT" in patch.env:
                listening.append(f"{patch.env['POD_IP']}:{patch.env['PADDLE_PORT']}")
    assert masters == {"127.0.0.1:40000", "127.0.0.1:40003"}
    assert len(set(listening)) == len(listening) == 4
    assert not masters & set(listening)


@pytest.mark.parametrize(
    ("task", "index", "message"),
    [
        pytest.param("worker", 2, 'task "worker" of job "j" has no replica 2', id="index-past-replicas"),
        pytest.param("worker", -1, 'task "worker" of job "j" has no replica -1', id="negative-index"),
    ],
)
def test_render_refuses_a_pod_the_job_does_not_have(task: str, index: int, message: str) -> None:
    job = make_job(name="j", tasks=[make_task(name="worker", replicas=2)], plugins={"env": []})
    with pytest.raises(PluginError, match=message):
        render_pod(job, task, index, DnsAddresses("j"))


def test_render_refuses_a_task_of_another_job() -> None:
    job = make_job(name="j", tasks=[make_task(name="worker")], plugins={"env": []})
    with pytest.raises(PluginError, match='task "ps" is not a task of job "j"'):
        render(job, make_task(name="ps"), 0, DnsAddresses("j"))


def test_an_unknown_plugin_is_refused_by_name() -> None:
    job = make_job(name="j", tasks=[make_task(name="worker")], plugins={"horovod": []})
    with pytest.raises(PluginError, match="unknown job plugin 'horovod'"):
        render_pod(job, "worker", 0, DnsAddresses("j"))
    with pytest.raises(PluginError, match="unknown job plugin 'horovod'"):
        job_ports(job)
