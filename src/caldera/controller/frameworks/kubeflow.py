"""caldera's `kubeflow` plugin: the environment Kubeflow's training-operator (release 1.9) gives each pod.

A Kubeflow manifest becomes a Volcano Job with this plugin (`caldera.core.kubeflow`);
its tasks are the replica types in lower case (`ps`, `worker`, `chief`, `master`,
`evaluator`, `launcher`). Flags: `--kind` (TFJob, PyTorchJob, MPIJob, PaddleJob),
`--nproc-per-node` (PyTorchJob, default `auto`), `--slots` (MPIJob's slotsPerWorker,
default 1). A replica's port is its framework container's named port (`tfjob-port`,
`pytorchjob-port`, `master`) as the manifest has it, else the operator's default, reached
through the executor's addresses (`127.0.0.1:<host port>` on the embedded cluster).

- TFJob (`tensorflow/tensorflow.go`): `TF_CONFIG` =
  `{"cluster":{<type>:["host:port",...]},"task":{"type":<type>,"index":i},"environment":"cloud"}`,
  Go's compact JSON with the cluster's keys sorted; every replica type but the evaluator
  is in the cluster; none at all for a job of one replica in total.
- PyTorchJob (`pytorch/envvar.go`, `master.go`): with a Master, `MASTER_ADDR`,
  `MASTER_PORT` (master 0's) and their `PET_` twins, `WORLD_SIZE` (all replicas ×
  nprocPerNode when it is a number, else × 1), `RANK` and `PET_NODE_RANK` (the master 0,
  worker i → i+1), `PET_NPROC_PER_NODE`; always `PET_NNODES` (all replicas).
- PaddleJob (`paddlepaddle/envvar.go`): `PADDLE_JOB_ID` (the job's name), `PADDLE_NNODES`,
  `PADDLE_MASTER` (worker 0's endpoint, or master 0's when there is a Master, the
  parameter-server mode, where masters also get `PADDLE_SERVER_NUM=1` and the others
  `PADDLE_TRAINER_NUM=1`); the rendezvous pod also gets `POD_IP_DUMMY`, its own host.
- MPIJob (`mpi/mpijob_controller.go`): the launcher gets `etc/mpi/hostfile`, a line
  `<host> slots=<slots>` a worker (the launcher first when it has GPUs), and
  `OMPI_MCA_orte_default_hostfile` naming it; a launcher without GPUs gets
  `NVIDIA_VISIBLE_DEVICES` and `NVIDIA_DRIVER_CAPABILITIES` empty. The operator's
  `OMPI_MCA_plm_rsh_agent` (a `kubectl exec` script) is not set: mpirun reaches the
  workers itself (on the embedded cluster every host is this one).
`PYTHONUNBUFFERED=1` comes with every framework plugin (`registry.render`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from caldera.controller.frameworks.flags import flag
from caldera.controller.frameworks.mpi import HOSTFILE
from caldera.controller.frameworks.patch import PluginError, PodPatch
from caldera.controller.frameworks.pod import PodRef, pod_name
from caldera.core.objects import Job, TaskSpec
from caldera.core.resources import GPU

# kind → (the framework's container, its named port, the operator's default port)
PORTS = {
    "TFJob": ("tensorflow", "tfjob-port", 2222),
    "PyTorchJob": ("pytorch", "pytorchjob-port", 23456),
    "PaddleJob": ("paddle", "master", 36543),
    "MPIJob": ("", "", 0),
}


def _kind(job: Job, args: Sequence[str]) -> str:
    kind = flag(args, "kind")
    if kind not in PORTS:
        raise PluginError(f'kubeflow plugin: job "{job.name}" needs --kind=' + "|".join(PORTS) + f", not {kind!r}")
    return kind


def port_of(task: TaskSpec, kind: str) -> int:
    """The replica's port: the named port of its framework container, else the operator's default."""
    container, name, default = PORTS[kind]
    for c in task.template.spec.containers:
        if c.name == container:
            for p in c.ports:
                if p.name == name:
                    return p.container_port
    return default


def ports(job: Job, task: TaskSpec, args: Sequence[str]) -> tuple[int, ...]:
    kind = _kind(job, args)
    return (port_of(task, kind),) if PORTS[kind][2] else ()


def render(pod: PodRef, args: Sequence[str]) -> PodPatch:
    kind = _kind(pod.job, args)
    if kind == "TFJob":
        return _tensorflow(pod)
    if kind == "PyTorchJob":
        return _pytorch(pod, flag(args, "nproc-per-node") or "auto")
    if kind == "PaddleJob":
        return _paddle(pod)
    return _mpi(pod, flag(args, "slots") or "1")


def _tensorflow(pod: PodRef) -> PodPatch:
    tasks = pod.job.spec.tasks
    if sum(t.replicas for t in tasks) == 1:
        return PodPatch()  # not distributed: no TF_CONFIG (the operator's isDistributed)
    cluster = {
        t.name: [pod.endpoint(m, port_of(t, "TFJob")) for m in pod.members(t)]
        for t in sorted(tasks, key=lambda t: t.name)
        if t.name != "evaluator"  # not part of the training cluster
    }
    config = {"cluster": cluster, "task": {"type": pod.task.name, "index": pod.index}, "environment": "cloud"}
    return PodPatch(env={"TF_CONFIG": json.dumps(config, separators=(",", ":"))})


def _pytorch(pod: PodRef, nproc: str) -> PodPatch:
    total = sum(t.replicas for t in pod.job.spec.tasks)
    env = {"PET_NNODES": str(total)}
    master = pod.job.spec.task("master")
    if master is not None:
        rank0 = pod_name(pod.job.name, master.name, 0)
        addr, port = pod.host(rank0), str(pod.addresses.port(rank0, port_of(master, "PyTorchJob")))
        rank = pod.index + 1 if pod.task.name == "worker" else pod.index
        env.update(
            {
                "MASTER_PORT": port,
                "MASTER_ADDR": addr,
                "PET_MASTER_PORT": port,
                "PET_MASTER_ADDR": addr,
                "WORLD_SIZE": str(total * (int(nproc) if nproc.isdigit() else 1)),
                "RANK": str(rank),
                "PET_NPROC_PER_NODE": nproc,
                "PET_NODE_RANK": str(rank),
            }
        )
    return PodPatch(env=env)


def _paddle(pod: PodRef) -> PodPatch:
    spec = pod.job.spec
    master = spec.task("master")
    rendezvous = master if master is not None else spec.task("worker")
    if rendezvous is None:
        raise PluginError(f'kubeflow plugin: PaddleJob "{pod.job.name}" has neither a master nor a worker task')
    rank0 = pod_name(pod.job.name, rendezvous.name, 0)
    env = {
        "PADDLE_JOB_ID": pod.job.name,
        "PADDLE_NNODES": str(sum(t.replicas for t in spec.tasks)),
        "PADDLE_MASTER": pod.endpoint(rank0, port_of(rendezvous, "PaddleJob")),
    }
    if pod.name == rank0:
        env["POD_IP_DUMMY"] = pod.host(rank0)
    if master is not None:
        env["PADDLE_SERVER_NUM" if pod.task.name == "master" else "PADDLE_TRAINER_NUM"] = "1"
    return PodPatch(env=env)


def _mpi(pod: PodRef, slots: str) -> PodPatch:
    if pod.task.name != "launcher":
        return PodPatch()
    if not slots.isdigit() or int(slots) < 1:
        raise PluginError(f"kubeflow plugin: --slots={slots} is not a number of slots (at least 1)")
    gpu_launcher = any(GPU in c.limits or GPU in c.requests for c in pod.task.template.spec.containers)
    worker = pod.job.spec.task("worker")
    hosts = ([pod.host(pod.name)] if gpu_launcher else []) + (
        [pod.host(m) for m in pod.members(worker)] if worker else []
    )
    env = {"OMPI_MCA_orte_default_hostfile": pod.path(HOSTFILE)}
    if not gpu_launcher:
        env.update({"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""})
    return PodPatch(env=env, files={HOSTFILE: "".join(f"{h} slots={slots}\n" for h in hosts)})
