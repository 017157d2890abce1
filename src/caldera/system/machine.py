"""What this machine has: CPUs, memory, GPUs (from `nvidia-smi`), and its split into virtual nodes.

With no `--nodes`, the embedded cluster is one node, this machine. With `--nodes N`
the machine is partitioned into N virtual nodes (CPU and memory divided evenly
unless given); `--gpus-per-node` on a machine without GPUs declares virtual GPUs,
which are accounted like real ones and shown as virtual.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from caldera.core import objects as o
from caldera.core.errors import CalderaError
from caldera.core.quantity import QuantityError
from caldera.core.resources import CPU, GPU, MEMORY, PODS, parse_resource_list

VIRTUAL_GPU_LABEL = "caldera.dev/virtual-gpus"
GPU_OFFSET_LABEL = "caldera.dev/gpu-offset"


@dataclass(frozen=True, slots=True)
class Machine:
    cpus: int
    memory_bytes: int
    gpus: int  # physical GPUs nvidia-smi reports


def detect() -> Machine:
    return Machine(os.cpu_count() or 1, _memory_bytes(), _gpu_count())


def _memory_bytes() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 * 2**30


def _gpu_count() -> int:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def plan_nodes(
    machine: Machine,
    nodes: int | None = None,
    cpus_per_node: str | None = None,
    memory_per_node: str | None = None,
    gpus_per_node: int | None = None,
) -> list[o.Node]:
    """The embedded cluster's nodes: `node-0` … `node-{N-1}` (or one node named after the machine)."""
    count = nodes or 1
    if count < 1:
        raise CalderaError("--nodes must be at least 1")
    try:
        cpu = parse_resource_list({CPU: cpus_per_node})[CPU] if cpus_per_node else machine.cpus * 1000 / count
        mem = (
            parse_resource_list({MEMORY: memory_per_node})[MEMORY] if memory_per_node else machine.memory_bytes / count
        )
    except QuantityError as e:
        raise CalderaError(f"--cpus-per-node/--memory-per-node: {e}") from None
    virtual = machine.gpus == 0 and bool(gpus_per_node)
    if gpus_per_node is None:
        gpus = machine.gpus // count
    else:
        gpus = gpus_per_node
        if machine.gpus and gpus * count > machine.gpus:
            raise CalderaError(
                f"--gpus-per-node {gpus} × {count} nodes is more than the {machine.gpus} GPUs of this machine"
            )
    out = []
    for i in range(count):
        labels = {"kubernetes.io/hostname": f"node-{i}", GPU_OFFSET_LABEL: str(i * gpus)}
        if virtual:
            labels[VIRTUAL_GPU_LABEL] = "true"
        alloc = {CPU: cpu, MEMORY: mem, PODS: 110.0}
        if gpus:
            alloc[GPU] = gpus * 1000.0
        out.append(
            o.Node(
                o.ObjectMeta(name=f"node-{i}", namespace="", labels=labels),
                allocatable=alloc,
                virtual_resources=frozenset({GPU}) if virtual else frozenset(),
            )
        )
    return out
