"""Named clusters (`--cluster preset:NAME`) and where the shared traces are found.

- `philly-64`: 8 nodes × 8 GPUs, the 64-GPU cluster of the Pollux/Sia Philly sample.
- `philly-full`: 311 nodes × 8 GPUs = 2,488 GPUs. Philly's machine list has 552
  servers, 321 with 2 GPUs and 231 with 8, 2,490 GPUs in all (Jeon et al., ATC'19;
  tallied in msr-fiddle/philly-traces#8, which also shows the list disagreeing with
  the job log: 8-GPU jobs on "2-GPU" machines). The preset keeps the GPU count
  and gives every node 8 GPUs, the shape the trace's multi-GPU gangs assume.
- `openb`: the Alibaba trace's own 1,523 heterogeneous nodes
  (`openb_node_list_all_node.csv`, CPU-only nodes included), read from the
  shared traces at run time: that trace is research-use only and never copied here.

Philly nodes get 64 CPUs and 512 GiB: Philly jobs ask only for GPUs, so these
never bind; they are there so a workload of real manifests also fits.

Traces are looked for in `$CALDERA_TRACES`, then in `../shared/traces` next to
the repository this package was installed from, then under the working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from caldera.core import objects as o
from caldera.core.errors import FieldError, ValidationError
from caldera.core.resources import CPU, GPU, MEMORY, PODS
from caldera.sim.openb import NODE_LIST, read_openb_nodes

PHILLY_TRACE = Path("philly-derived") / "philly.csv"
OPENB_DIR = Path("alibaba-gpu-v2023")
OPENB_PODS = OPENB_DIR / "openb_pod_list_default.csv"
GIB = 1024.0**3

# name → (nodes, GPUs per node, one line for `--help` and reports)
PHILLY_PRESETS = {
    "philly-64": (8, 8, "8 nodes × 8 GPUs (the Pollux/Sia sample's 64 GPUs)"),
    "philly-full": (311, 8, "311 nodes × 8 GPUs = 2,488 GPUs (Philly had 2,490 on 552 servers)"),
}
PRESETS = (*PHILLY_PRESETS, "openb")


def traces_dir() -> Path:
    """The first of $CALDERA_TRACES, <repo>/../shared/traces, ./../shared/traces that exists."""
    env = os.environ.get("CALDERA_TRACES")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[3]  # src/caldera/sim/presets.py → the repository
    for candidate in (repo.parent / "shared" / "traces", Path.cwd().parent / "shared" / "traces"):
        if candidate.is_dir():
            return candidate
    return repo.parent / "shared" / "traces"  # named in the error when the trace is then missing


def shared_trace(relative: Path) -> Path:
    """The shared trace file `relative` (under `traces_dir()`); a ValidationError saying where it was looked for.

    The error tells how to point caldera at the traces: `CALDERA_TRACES=DIR`."""
    path = traces_dir() / relative
    if path.is_file():
        return path
    where = f"$CALDERA_TRACES ({os.environ['CALDERA_TRACES']})" if os.environ.get("CALDERA_TRACES") else traces_dir()
    rule = (
        f"the shared trace {relative} is not under {where}: set CALDERA_TRACES to the directory that holds "
        f"{relative} (e.g. CALDERA_TRACES=/path/to/shared/traces), or give the file as KIND:PATH"
    )
    raise ValidationError([FieldError("--trace", rule)])


def philly_nodes(count: int, gpus: int, *, prefix: str = "gpu") -> list[o.Node]:
    alloc = {CPU: 64_000.0, MEMORY: 512 * GIB, GPU: gpus * 1000.0, PODS: 110.0}
    width = len(str(count - 1))
    nodes = []
    for i in range(count):
        name = f"{prefix}-{i:0{width}d}"
        meta = o.ObjectMeta(name=name, namespace="", labels={"kubernetes.io/hostname": name})
        nodes.append(o.Node(meta, allocatable=dict(alloc)))
    return nodes


def preset_nodes(name: str, *, openb_dir: Path | None = None) -> tuple[list[o.Node], str]:
    """The nodes of a preset and a one-line description of them."""
    if name in PHILLY_PRESETS:
        count, gpus, words = PHILLY_PRESETS[name]
        return philly_nodes(count, gpus), f"preset:{name}: {words}"
    if name == "openb":
        path = openb_dir / NODE_LIST if openb_dir is not None else shared_trace(OPENB_DIR / NODE_LIST)
        nodes, errors = read_openb_nodes(path)
        if errors:
            raise ValidationError(errors, str(path))
        total = sum(n.allocatable.get(GPU, 0.0) for n in nodes) / 1000.0
        return nodes, f"preset:openb: {len(nodes):,} Alibaba nodes, {total:,.0f} GPUs ({path.name})"
    raise ValidationError([FieldError("--cluster", f"no preset {name!r} (presets: {', '.join(PRESETS)})")])
