"""Volcano's `pytorch` plugin: the static rendezvous of `torch.distributed` (env://) and of torchrun.

Flags `--master` (task, default `master`), `--worker` (default `worker`), `--port`
(the master's container port, default 23456). Pods of the master and worker tasks get:
- `MASTER_ADDR`, `MASTER_PORT`: the rank-0 pod's host and the host port its `--port` is
  mapped to;
- `WORLD_SIZE`: pods of both tasks (one process per pod, as Volcano);
- `RANK`: 0 for the master, `index + 1` for a worker;
- the same as torchrun's flag defaults (`PET_MASTER_ADDR`, `PET_MASTER_PORT`,
  `PET_NNODES`, `PET_NODE_RANK`), as Kubeflow's PyTorchJob sets them, so
  `torchrun --nproc-per-node N train.py` works with no rendezvous flags;
- `PET_RDZV_ENDPOINT`: the master's `host:port` again, so `torchrun --rdzv-backend=c10d`
  meets at the master pod too (without it torchrun's c10d falls back to `localhost:29400`,
  one fixed port for every job of a host). Static rendezvous reads the same endpoint, as
  torchrun uses `--rdzv-endpoint` before `--master-addr/--master-port` when it is given.

Two choices where Volcano is loose:
- exactly one master: Volcano gives RANK 0 to every master replica; a master task with
  any other replica count is refused;
- a job without the master task (Arena's `submit pytorch --workers N`, where the
  workers count the master) makes worker 0 the master: RANK = index, WORLD_SIZE = workers.
Other tasks of the job get nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from caldera.controller.frameworks.flags import names, port_flag, role_task
from caldera.controller.frameworks.patch import PluginError, PodPatch
from caldera.controller.frameworks.pod import PodRef, pod_name
from caldera.core.objects import Job, TaskSpec

DEFAULT_PORT = 23456


def _roles(job: Job, args: Sequence[str]) -> tuple[TaskSpec | None, TaskSpec | None]:
    master = role_task(job, "pytorch", args, "master", "master")
    worker = role_task(job, "pytorch", args, "worker", "worker")
    if master is None and worker is None:
        raise PluginError(
            f'pytorch plugin: job "{job.name}" has neither a master nor a worker task (--master=NAME, --worker=NAME)'
        )
    if master is not None and master.replicas != 1:
        raise PluginError(
            f'pytorch plugin: the master task "{master.name}" has {master.replicas} replicas; '
            "it must have exactly 1 (the pod of RANK 0)"
        )
    return master, worker


def ports(job: Job, task: TaskSpec, args: Sequence[str]) -> tuple[int, ...]:
    # Every pod of both tasks opens the port, as Volcano's plugin does: in a worker-only
    # job the master is a worker, and ports are decided per task, not per pod.
    master, worker = _roles(job, args)
    return (port_flag("pytorch", args, DEFAULT_PORT),) if task.name in names(master, worker) else ()


def render(pod: PodRef, args: Sequence[str]) -> PodPatch:
    master, worker = _roles(pod.job, args)
    if pod.task.name not in names(master, worker):
        return PodPatch()
    workers = worker.replicas if worker is not None else 0
    if master is not None:
        rank0 = pod_name(pod.job.name, master.name, 0)
        world = 1 + workers
        rank = 0 if pod.task.name == master.name else pod.index + 1
    else:
        assert worker is not None  # _roles refuses a job with neither
        rank0 = pod_name(pod.job.name, worker.name, 0)
        world = workers
        rank = pod.index
    addr = pod.host(rank0)
    port = str(pod.addresses.port(rank0, port_flag("pytorch", args, DEFAULT_PORT)))
    env = {
        "MASTER_ADDR": addr,
        "MASTER_PORT": port,
        "WORLD_SIZE": str(world),
        "RANK": str(rank),
        "PET_MASTER_ADDR": addr,
        "PET_MASTER_PORT": port,
        "PET_NNODES": str(world),
        "PET_NODE_RANK": str(rank),
        "PET_RDZV_ENDPOINT": f"{addr}:{port}",
    }
    return PodPatch(env=env)
