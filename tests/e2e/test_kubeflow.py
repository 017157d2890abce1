"""Kubeflow manifests on a real daemon: a PyTorchJob's pods form a real gloo group, a TFJob's get the operator's TF_CONFIG."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from caldera.testing.waiting import wait_until

from .conftest import Caldera

pytestmark = pytest.mark.e2e


def replica(command: list[str], container: str, replicas: int) -> dict[str, Any]:
    resources = {"requests": {"cpu": "100m", "memory": "256Mi"}}
    return {
        "replicas": replicas,
        "template": {"spec": {"containers": [{"name": container, "command": command, "resources": resources}]}},
    }


# Real torch.distributed over gloo, from the environment alone (env://): every rank adds its rank + 1.
ALL_REDUCE = """
import os, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
total = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(total)
print(f"rank {dist.get_rank()} of {dist.get_world_size()} via {os.environ['MASTER_ADDR']}: sum {total.item():g}")
dist.barrier()
dist.destroy_process_group()
"""


def test_a_pytorchjob_runs_torch_distributed_with_the_operators_rendezvous(caldera: Caldera) -> None:
    train = ["python", "-c", ALL_REDUCE]
    manifest = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "ddp"},
        "spec": {
            "pytorchReplicaSpecs": {"Master": replica(train, "pytorch", 1), "Worker": replica(train, "pytorch", 2)},
            "runPolicy": {"schedulingPolicy": {"minAvailable": 3}},
        },
    }
    caldera.up()
    assert caldera.apply(yaml.safe_dump(manifest)) == "pytorchjob.kubeflow.org/ddp created\n"
    caldera.wait_job("ddp", lambda j: j["phase"] == "Completed", "the PyTorchJob to complete", timeout=240)
    job = caldera.json("get", "ddp")
    assert (job["kind"], job["type"], job["retryCount"]) == ("PyTorchJob", "PyTorchJob", 0)
    assert caldera.ok("logs", "ddp").endswith("\nrank 0 of 3 via 127.0.0.1: sum 6\n")  # the master's: the chief
    assert "rank 2 of 3 via 127.0.0.1: sum 6" in caldera.pod_log("ddp-worker-1")
    assert caldera.ok("list", "--no-headers").split()[:2] == ["ddp", "PyTorchJob"]


# Every pod prints its TF_CONFIG and leaves a mark; the workers end only once all four have printed (they
# wait for the test's lock on the gate, which it holds until it sees the four marks), because the job completes
# with its workers and the operator's cleanup then stops the ps and evaluator.
SHOW_TF_CONFIG = """
import fcntl, json, os, pathlib, sys
print("TF_CONFIG=" + os.environ["TF_CONFIG"], flush=True)
task = json.loads(os.environ["TF_CONFIG"])["task"]
(pathlib.Path(sys.argv[1]) / f"{task['type']}-{task['index']}").touch()
if task["type"] == "worker":
    with open(sys.argv[2]) as gate:
        fcntl.flock(gate, fcntl.LOCK_SH)
"""


def test_a_tfjob_gets_tf_config_as_the_operator_writes_it(caldera: Caldera, tmp_path: Path) -> None:
    marks, gate = tmp_path / "printed", tmp_path / "gate"
    marks.mkdir()
    gate.touch()
    show = ["python", "-c", SHOW_TF_CONFIG, str(marks), str(gate)]
    manifest = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "tf"},
        "spec": {
            "tfReplicaSpecs": {
                "PS": replica(show, "tensorflow", 1),
                "Worker": replica(show, "tensorflow", 2),
                "Evaluator": replica(show, "tensorflow", 1),
            }
        },
    }
    with gate.open() as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the workers wait for it: released (closed) once all four printed
        caldera.up()
        caldera.apply(manifest)
        wait_until(lambda: len(list(marks.iterdir())) == 4, 300, "all four pods to print TF_CONFIG")
    caldera.wait_job("tf", lambda j: j["phase"] == "Completed", "the TFJob to complete")  # when all workers have
    configs = {}
    for pod in ("tf-ps-0", "tf-worker-0", "tf-worker-1", "tf-evaluator-0"):
        line = next(x for x in caldera.pod_log(pod).splitlines() if x.startswith("TF_CONFIG="))
        configs[pod] = json.loads(line.removeprefix("TF_CONFIG="))
    cluster = configs["tf-ps-0"]["cluster"]
    assert list(cluster) == ["ps", "worker"]  # sorted, the evaluator left out, as the operator's
    assert len(cluster["worker"]) == 2 and all(e.startswith("127.0.0.1:") for e in cluster["ps"] + cluster["worker"])
    assert len({*cluster["ps"], *cluster["worker"]}) == 3  # a port of its own for every pod
    for pod, config in configs.items():
        assert config["cluster"] == cluster and config["environment"] == "cloud"
        assert config["task"] == {"type": pod.split("-")[1], "index": int(pod.rsplit("-", 1)[1])}
    assert caldera.ok("logs", "tf", "-t", "1").startswith("TF_CONFIG=")  # worker 0's, not the ps's
    assert json.loads(caldera.ok("logs", "tf", "-t", "1").removeprefix("TF_CONFIG="))["task"]["type"] == "worker"
