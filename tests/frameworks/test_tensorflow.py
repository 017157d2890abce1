"""`tensorflow`: TF_CONFIG with every role's endpoints and the pod's own role and index."""

from __future__ import annotations

import json

import pytest

from caldera.core.addresses import DnsAddresses
from caldera.core.objects import Job, TaskSpec

from .builders import PortPool, make_job, make_task, render_all, render_pod


def ps_job() -> Job:
    # Declared chief first: TF_CONFIG lists roles in Volcano's order whatever the task order.
    return make_job(
        name="tf",
        tasks=[
            make_task(name="chief", replicas=1),
            make_task(name="ps", replicas=2),
            make_task(name="worker", replicas=2),
        ],
        plugins={"tensorflow": ["--ps=ps", "--worker=worker", "--chief=chief", "--port=2222"]},
    )


def test_exact_tf_config_on_kubernetes() -> None:
    env = render_pod(ps_job(), "worker", 1, DnsAddresses("tf")).env
    assert env["TF_CONFIG"] == (
        '{"cluster":{"ps":["tf-ps-0.tf:2222","tf-ps-1.tf:2222"],'
        '"worker":["tf-worker-0.tf:2222","tf-worker-1.tf:2222"],'
        '"chief":["tf-chief-0.tf:2222"]},'
        '"task":{"type":"worker","index":1}}'
    )


def test_tf_config_on_the_embedded_cluster_uses_each_pods_port() -> None:
    job = ps_job()
    patches = render_all(job, PortPool(first=40000).addresses(job))
    cluster = {
        "chief": ["127.0.0.1:40000"],
        "ps": ["127.0.0.1:40001", "127.0.0.1:40002"],
        "worker": ["127.0.0.1:40003", "127.0.0.1:40004"],
    }
    expected_tasks = {
        "tf-chief-0": {"type": "chief", "index": 0},
        "tf-ps-0": {"type": "ps", "index": 0},
        "tf-ps-1": {"type": "ps", "index": 1},
        "tf-worker-0": {"type": "worker", "index": 0},
        "tf-worker-1": {"type": "worker", "index": 1},
    }
    for pod, patch in patches.items():
        assert json.loads(patch.env["TF_CONFIG"]) == {"cluster": cluster, "task": expected_tasks[pod]}, pod


def test_roles_played_by_renamed_tasks_and_an_evaluator() -> None:
    job = make_job(
        name="tf",
        tasks=[make_task(name="pserver"), make_task(name="trainer", replicas=2), make_task(name="evaluator")],
        plugins={"tensorflow": ["--ps=pserver", "--worker=trainer"]},
    )
    config = json.loads(render_pod(job, "evaluator", 0, DnsAddresses("tf")).env["TF_CONFIG"])
    assert config == {
        "cluster": {
            "ps": ["tf-pserver-0.tf:2222"],
            "worker": ["tf-trainer-0.tf:2222", "tf-trainer-1.tf:2222"],
            "evaluator": ["tf-evaluator-0.tf:2222"],
        },
        "task": {"type": "evaluator", "index": 0},
    }


@pytest.mark.parametrize(
    "tasks",
    [
        pytest.param([make_task(name="worker", replicas=1)], id="one-task-one-replica"),
        pytest.param([make_task(name="worker", replicas=2), make_task(name="logger")], id="task-with-no-role"),
    ],
)
def test_no_tf_config(tasks: list[TaskSpec]) -> None:
    job = make_job(name="tf", tasks=tasks, plugins={"tensorflow": []})
    last = job.spec.tasks[-1].name
    assert "TF_CONFIG" not in render_pod(job, last, 0, DnsAddresses("tf")).env
