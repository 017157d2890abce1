"""Volcano's `mpi` plugin, plus the hostfile that mpi-operator writes for OpenMPI.

Flags `--master` (the launcher task, default `master`), `--worker` (default `worker`)
and `--port` (the workers' sshd, default 22; opened on every pod of both tasks, as
Volcano). Only launcher pods get anything:
- `MPI_HOST`: the worker hosts, comma-separated (Volcano);
- `etc/mpi/hostfile`: one `<host> slots=<n>` line per worker, `n` being a worker's GPU
  request (1 without GPUs). On the embedded cluster every line reads `127.0.0.1`; OpenMPI
  adds up the slots of a repeated host, so the launcher still sees every worker's share;
- `OMPI_MCA_orte_default_hostfile`: that file's path, absolute under the pod directory
  when `render` is given one, else relative to it (the pod's working directory);
- `OMPI_MCA_orte_keep_fqdn_hostnames=true`, as mpi-operator: OpenMPI would otherwise cut
  `<pod>.<job>` down to `<pod>`, which does not resolve.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from caldera.controller.frameworks.flags import names, port_flag, role_task
from caldera.controller.frameworks.patch import PluginError, PodPatch
from caldera.controller.frameworks.pod import PodRef
from caldera.core.objects import Job, TaskSpec
from caldera.core.resources import GPU

DEFAULT_PORT = 22
HOSTFILE = "etc/mpi/hostfile"


def _roles(job: Job, args: Sequence[str]) -> tuple[TaskSpec, TaskSpec]:
    master = role_task(job, "mpi", args, "master", "master")
    worker = role_task(job, "mpi", args, "worker", "worker")
    if master is None or worker is None:
        missing = "master" if master is None else "worker"
        raise PluginError(f'mpi plugin: job "{job.name}" has no {missing} task "{missing}" (--{missing}=NAME)')
    return master, worker


def slots(task: TaskSpec) -> int:
    """MPI slots of one pod of `task`: its whole GPUs, at least 1."""
    spec = task.template.spec
    milli = spec.requests().get(GPU, 0.0)
    if not milli:
        # An object built in code may set only limits; the manifest reader copies them into requests.
        milli = sum(c.limits.get(GPU, 0.0) for c in spec.containers)
    return max(1, math.floor(milli / 1000))


def ports(job: Job, task: TaskSpec, args: Sequence[str]) -> tuple[int, ...]:
    master, worker = _roles(job, args)
    return (port_flag("mpi", args, DEFAULT_PORT),) if task.name in names(master, worker) else ()


def render(pod: PodRef, args: Sequence[str]) -> PodPatch:
    master, worker = _roles(pod.job, args)
    if pod.task.name != master.name:
        return PodPatch()
    hosts = [pod.host(m) for m in pod.members(worker)]
    n = slots(worker)
    env = {
        "MPI_HOST": ",".join(hosts),
        "OMPI_MCA_orte_default_hostfile": pod.path(HOSTFILE),
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
    }
    return PodPatch(env=env, files={HOSTFILE: "".join(f"{h} slots={n}\n" for h in hosts)})
