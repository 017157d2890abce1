"""Reading the Alibaba openb trace, on tiny synthetic files (the real trace is research-use only: never copied)."""

from __future__ import annotations

from pathlib import Path

import pytest

from caldera.core.resources import CPU, GPU, MEMORY
from caldera.sim.openb import GPU_MODEL_LABEL, openb_arrivals, read_openb_nodes, read_openb_pods
from caldera.sim.presets import OPENB_DIR, OPENB_PODS, traces_dir

from .tracefiles import openb_files

MIB = 1024.0 * 1024.0
PODS = [
    "pod-a,8000,16384,1,460,,LS,Succeeded,100,900,200",  # a sharing pod: 0.46 GPU, ran 700 s
    "pod-b,4000,8192,0,0,,BE,Failed,0,50,10",  # CPU only
    "pod-c,32000,65536,8,1000,,LS,Running,300,12902960,400",  # still running at the snapshot: censored
    "pod-d,1000,1024,1,1000,,BE,Pending,500,600,",  # never scheduled: no run time, left out
    "pod-e,1000,1024,2,1000,V100M16|V100M32,LS,Succeeded,50,150,50",  # asks for a GPU model
    "pod-f,lots,1024,1,1000,,LS,Succeeded,0,10,0",  # malformed
]
NODES = ["node-0,96000,393216,8,G2", "node-1,32000,262144,0,", "node-2,64000,262144,2,V100M16"]


def test_pods_become_one_pod_jobs_with_cpu_memory_and_milli_gpus(tmp_path: Path) -> None:
    trace = read_openb_pods(openb_files(tmp_path, PODS, NODES))
    assert [p.name for p in trace.pods] == ["pod-b", "pod-e", "pod-a", "pod-c"]  # by creation time
    assert trace.never_scheduled == 1
    (error,) = trace.errors
    assert error.path == "line 7" and "must be numbers" in error.rule
    by_name = {p.name: p for p in trace.pods}
    assert by_name["pod-a"].duration == 700 and by_name["pod-a"].gpu_milli == 460
    assert by_name["pod-c"].censored and not by_name["pod-a"].censored
    arrivals = {a.job.name: a for a in openb_arrivals(trace.pods)}
    assert arrivals["pod-a"].submit_time == 100
    a_spec = arrivals["pod-a"].job.spec
    assert a_spec.min_available == 1 and a_spec.queue == "default"
    assert a_spec.tasks[0].template.spec.requests() == {CPU: 8000.0, MEMORY: 16384 * MIB, GPU: 460.0}
    assert GPU not in arrivals["pod-b"].job.spec.tasks[0].template.spec.requests()
    assert arrivals["pod-c"].job.spec.tasks[0].template.spec.requests()[GPU] == 8000.0
    (term,) = arrivals["pod-e"].job.spec.tasks[0].template.spec.node_affinity
    assert term.matches({GPU_MODEL_LABEL: "V100M32"}) and not term.matches({GPU_MODEL_LABEL: "T4"})


def test_nodes_keep_their_capacity_and_gpu_model(tmp_path: Path) -> None:
    openb_files(tmp_path, PODS, [*NODES, "node-3,abc,1,1,T4"])
    nodes, errors = read_openb_nodes(tmp_path / "openb_node_list_all_node.csv")
    assert [n.name for n in nodes] == ["node-0", "node-1", "node-2"]
    assert nodes[0].allocatable[GPU] == 8000.0 and nodes[0].allocatable[CPU] == 96000.0
    assert nodes[0].metadata.labels[GPU_MODEL_LABEL] == "G2"
    assert GPU not in nodes[1].allocatable and GPU_MODEL_LABEL not in nodes[1].metadata.labels
    assert [e.path for e in errors] == ["line 5"]


@pytest.mark.skipif(not (traces_dir() / OPENB_PODS).is_file(), reason="the shared Alibaba trace is not here")
def test_the_real_trace_reads_whole() -> None:
    trace = read_openb_pods(traces_dir() / OPENB_PODS)
    assert trace.errors == []
    assert trace.never_scheduled == 897  # the trace README's Pending count
    assert len(trace.pods) == 8152 - 897
    nodes, errors = read_openb_nodes(traces_dir() / OPENB_DIR / "openb_node_list_all_node.csv")
    assert (len(nodes), errors) == (1523, [])
    assert sum(n.allocatable.get(GPU, 0.0) for n in nodes) == 6212 * 1000.0
