"""Tiny trace files written in tmp_path: the real Alibaba trace is never copied into this repository."""

from __future__ import annotations

from pathlib import Path

from caldera.testing.clirun import Result as Result
from caldera.testing.clirun import caldera as caldera

REPO = Path(__file__).resolve().parents[2]

PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"
OPENB_PODS_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
)
OPENB_NODES_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"


def philly_csv(tmp_path: Path, rows: list[str], *, name: str = "philly.csv") -> Path:
    path = tmp_path / name
    path.write_text(PHILLY_HEADER + "".join(r + "\n" for r in rows))
    return path


def philly_row(when: str, duration: float, gpus: int, vc: str = "vc1") -> str:
    return f"{when},{duration},{gpus},{duration * gpus},{vc}"


def openb_files(tmp_path: Path, pods: list[str], nodes: list[str]) -> Path:
    """Writes the pod list and, next to it, the node list the reader looks for; returns the pod list."""
    pod_path = tmp_path / "openb_pod_list_default.csv"
    pod_path.write_text(OPENB_PODS_HEADER + "".join(p + "\n" for p in pods))
    (tmp_path / "openb_node_list_all_node.csv").write_text(OPENB_NODES_HEADER + "".join(n + "\n" for n in nodes))
    return pod_path
