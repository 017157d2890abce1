"""The Alibaba GPU trace v2023 ("openb", Weng et al., ATC'23) as a simulator workload and cluster.

Research-use only: it is read from `../shared/traces/` at run time and never
copied into this repository.

Pods (`openb_pod_list_*.csv`): each pod is a job of one pod (the trace has no
gang grouping and no tenant, so every job is in the queue `default`) requesting
`cpu_milli`, `memory_mib` and `num_gpu × gpu_milli` milli-GPUs of
`nvidia.com/gpu`. A GPU-sharing pod (`num_gpu` 1, `gpu_milli` < 1000) thus asks
for a fraction of a GPU in the resource caldera already counts in milli-units:
nothing new for the scheduler, the reports or the utilisation metric. The cost:
a node is a pool of milli-GPUs, not a set of devices, so two 0.6-GPU pods fit on
a 1-GPU node here though not on a real one; fragmentation (the paper's subject)
is underestimated, and results are an optimistic bound for sharing pods.

Run time is `deletion_time − scheduled_time`. Pods without `scheduled_time`
(Pending in the snapshot: they never ran, so their run time is unknown) are left
out and counted. Pods still Running at the snapshot have a right-censored run
time: the replay runs them for the observed part only (a lower bound) and counts
them. `gpu_spec` (models a pod accepts, `A|B`) becomes a required node affinity
on the node label `caldera.dev/gpu-model`.

Nodes (`openb_node_list_*.csv`): one node per row with its CPU, memory, GPUs and
the GPU model as a label; `openb_node_list_all_node.csv` (with the CPU-only nodes
the trace's CPU pods need) is the default.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from caldera.core import objects as o
from caldera.core.errors import FieldError
from caldera.core.resources import CPU, GPU, MEMORY, PODS
from caldera.sim.inputs import JobArrival
from caldera.sim.traces import check_header, checkpoint_annotations, read_csv_lines

POD_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
NODE_LIST = "openb_node_list_all_node.csv"
GPU_MODEL_LABEL = "caldera.dev/gpu-model"
MIB = 1024.0 * 1024.0


@dataclass(frozen=True, slots=True)
class OpenbPod:
    line: int
    name: str
    submit: float  # creation_time, seconds from the trace's start
    duration: float  # deletion_time − scheduled_time
    cpu_milli: float
    memory_mib: float
    gpu_milli: float  # num_gpu × gpu_milli
    gpu_spec: str
    censored: bool  # still Running at the snapshot: the run time is a lower bound

    @property
    def gpus(self) -> float:
        return self.gpu_milli / 1000.0


@dataclass(frozen=True, slots=True)
class OpenbTrace:
    pods: list[OpenbPod]  # sorted by submit time
    errors: list[FieldError]  # malformed rows, by line
    never_scheduled: int  # pods without scheduled_time, left out


def read_openb_pods(path: str | Path) -> OpenbTrace:
    lines = read_csv_lines(path)
    first = next(lines, None)
    check_header(path, first[1] if first else None, POD_COLUMNS)
    pods: list[OpenbPod] = []
    errors: list[FieldError] = []
    never = 0
    for line, rec in lines:
        if len(rec) < len(POD_COLUMNS):
            errors.append(FieldError(f"line {line}", f"expected {len(POD_COLUMNS)} columns, found {len(rec)}"))
            continue
        f = dict(zip(POD_COLUMNS, (v.strip() for v in rec), strict=False))
        if not f["scheduled_time"]:
            never += 1
            continue
        pod = _pod(line, f, errors)
        if pod is not None:
            pods.append(pod)
    pods.sort(key=lambda p: (p.submit, p.line))
    return OpenbTrace(pods, errors, never)


def _pod(line: int, f: dict[str, str], errors: list[FieldError]) -> OpenbPod | None:
    where = f"line {line}"
    try:
        cpu, mem = float(f["cpu_milli"]), float(f["memory_mib"])
        num_gpu, gpu_milli = int(f["num_gpu"]), float(f["gpu_milli"] or 0)
        created, deleted, scheduled = float(f["creation_time"]), float(f["deletion_time"]), float(f["scheduled_time"])
    except ValueError:
        errors.append(
            FieldError(where, "cpu_milli, memory_mib, gpu_milli and the times must be numbers, num_gpu an integer")
        )
        return None
    if min(cpu, mem, num_gpu, gpu_milli, created) < 0 or (num_gpu and not 0 < gpu_milli <= 1000):
        errors.append(FieldError(where, "requests must be >= 0 and gpu_milli in (0, 1000] when num_gpu > 0"))
        return None
    if not created <= scheduled <= deleted:
        errors.append(FieldError(where, "expected creation_time <= scheduled_time <= deletion_time"))
        return None
    if not f["name"]:
        errors.append(FieldError(where, "name must be set"))
        return None
    # A zero run time would make the job end in the same instant it starts: give it a second.
    duration = max(deleted - scheduled, 1.0)
    return OpenbPod(
        line, f["name"], created, duration, cpu, mem, num_gpu * gpu_milli, f["gpu_spec"], f["pod_phase"] == "Running"
    )


def pod_job(pod: OpenbPod, *, namespace: str = "default", checkpoint: float | None = None) -> o.Job:
    requests = {CPU: pod.cpu_milli, MEMORY: pod.memory_mib * MIB}
    if pod.gpu_milli:
        requests[GPU] = pod.gpu_milli
    models = tuple(m for m in pod.gpu_spec.split("|") if m)
    affinity = (o.NodeSelectorTerm((o.SelectorRequirement(GPU_MODEL_LABEL, "In", models),)),) if models else ()
    container = o.Container(name="main", requests=requests)
    spec = o.PodSpec(containers=(container,), restart_policy="Never", node_affinity=affinity)
    task = o.TaskSpec(name="main", replicas=1, template=o.PodTemplate(spec=spec))
    meta = o.ObjectMeta(name=pod.name, namespace=namespace, annotations=checkpoint_annotations(checkpoint))
    return o.Job(meta, o.JobSpec(tasks=(task,), min_available=1))


def openb_arrivals(
    pods: list[OpenbPod], origin: float = 0.0, rate_scale: float = 1.0, checkpoint: float | None = None
) -> list[JobArrival]:
    return [JobArrival((p.submit - origin) / rate_scale, pod_job(p, checkpoint=checkpoint), p.duration) for p in pods]


def read_openb_nodes(path: str | Path) -> tuple[list[o.Node], list[FieldError]]:
    lines = read_csv_lines(path)
    first = next(lines, None)
    check_header(path, first[1] if first else None, NODE_COLUMNS)
    nodes: list[o.Node] = []
    errors: list[FieldError] = []
    for line, rec in lines:
        if len(rec) < len(NODE_COLUMNS) - 1:  # the model column is empty (and may be missing) on CPU nodes
            errors.append(FieldError(f"line {line}", f"expected {len(NODE_COLUMNS)} columns, found {len(rec)}"))
            continue
        name, model = rec[0].strip(), (rec[4].strip() if len(rec) > 4 else "")
        try:
            cpu, mem, gpus = float(rec[1]), float(rec[2]), int(rec[3])
        except ValueError:
            errors.append(FieldError(f"line {line}", "cpu_milli and memory_mib must be numbers, gpu an integer"))
            continue
        if not name or min(cpu, mem, gpus) < 0:
            errors.append(FieldError(f"line {line}", "sn must be set and the capacities >= 0"))
            continue
        alloc = {CPU: cpu, MEMORY: mem * MIB, PODS: 110.0}
        if gpus:
            alloc[GPU] = gpus * 1000.0
        labels = {"kubernetes.io/hostname": name} | ({GPU_MODEL_LABEL: model} if model else {})
        nodes.append(o.Node(o.ObjectMeta(name=name, namespace="", labels=labels), allocatable=alloc))
    return nodes, errors
