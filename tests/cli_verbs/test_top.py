"""`caldera top node` and `caldera top job`."""

from __future__ import annotations

import json

from caldera.testing.fake_cluster import FakeCluster

from .conftest import Run
from .manifests import job

NODE = {
    "name": "node-0",
    "allocatable": {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "2", "pods": "110"},
    "allocated": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1", "pods": "1"},
    "gpus": 2,
    "gpusUsed": 1,
    "virtualGpus": True,
    "pods": 1,
}


def test_top_node(run: Run, fake: FakeCluster) -> None:
    fake.nodes = [NODE, {**NODE, "name": "node-1", "gpusUsed": 2, "allocated": {"cpu": "500m"}}]
    r = run("top", "node")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "CPU", "MEMORY", "GPU", "PODS"]
    assert lines[1].split() == ["node-0", "2/8", "(25%)", "4Gi/16Gi", "(25%)", "1/2", "(virtual)", "1"]
    assert lines[2].split()[:5] == ["node-1", "0.5/8", "(6%)", "0/16Gi", "(0%)"]
    assert lines[-1] == "Allocated/Total GPUs in cluster: 3/4 (75.0%) (virtual)"


def test_top_node_real_gpus_and_json(run: Run, fake: FakeCluster) -> None:
    fake.nodes = [{**NODE, "virtualGpus": False}]
    assert "(virtual)" not in run("top", "node").stdout
    assert json.loads(run("top", "node", "-o", "json").stdout)["items"] == fake.nodes


def test_top_job(run: Run, fake: FakeCluster) -> None:
    fake.apply(job("train", workers=2, gpus=1))
    fake.set_phase("default", "train", "Running")
    for pod in ("train-master-0", "train-worker-0"):
        fake.set_pod("default", pod, phase="Running", node="node-0")
    fake.set_pod("default", "train-worker-1", phase="Succeeded", node="node-0")
    r = run("top", "job")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].split() == [
        "NAME",
        "PHASE",
        "RUNNING",
        "GPU(REQ)",
        "GPU(ALLOC)",
        "CPU(REQ)",
        "MEMORY(REQ)",
        "DURATION",
    ]
    assert lines[1].split() == ["train", "Running", "2/3", "3", "2", "1500m", "3Gi", "2m5s"]
    assert lines[-1] == "Total allocated/requested GPUs of jobs: 2/3"
    row = {
        "name": "train",
        "namespace": "default",
        "phase": "Running",
        "running": "2/3",
        "gpusRequested": 3,
        "gpusAllocated": 2,
        "cpuRequested": "1500m",
        "memoryRequested": "3Gi",
        "duration": "2m5s",
    }
    assert json.loads(run("top", "job", "train", "-o", "json").stdout) == row  # one named job: the object
    assert json.loads(run("top", "job", "-o", "json").stdout)["items"] == [row]  # a selection: a List


def test_top_job_all_namespaces(run: Run, fake: FakeCluster) -> None:
    fake.apply(job("a", namespace="x", gpus=0))
    out = run("top", "job", "-A").stdout
    assert out.splitlines()[0].split()[:2] == ["NAMESPACE", "NAME"] and out.splitlines()[1].split()[:2] == ["x", "a"]
    assert out.splitlines()[-1] == "Total allocated/requested GPUs of jobs: 0/0"
