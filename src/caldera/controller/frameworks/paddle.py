"""caldera's `paddle` plugin (Volcano has none): what Paddle's fleet role maker and launcher read.

Flags `--pserver` (task, default `pserver`), `--trainer` (default `trainer`) and
`--port`: the container port each pserver and trainer listens on, default 36543 (the
port Kubeflow's PaddleJob uses; the legacy paddle-operator drew a random one). The job
is in parameter-server mode when it has the pserver task, otherwise collective.

Every pod of both tasks gets `POD_IP` (its host), `PADDLE_PORT` (its own mapped
port), `PADDLE_TRAINER_ENDPOINTS` (`host:port` of each trainer; but see below), `PADDLE_TRAINERS_NUM`,
`PADDLE_TRAINER_ID` (its index within its task, pservers included), and
`TRAINING_ROLE` = `PADDLE_TRAINING_ROLE` (`PSERVER` or `TRAINER`). Then:
- parameter-server mode: `PADDLE_PSERVERS_IP_PORT_LIST` (`host:port` of each pserver),
  what `role_maker._ps_env` requires; a pserver's `POD_IP:PADDLE_PORT` is its entry in
  that list, which is how Paddle finds a server's id;
- collective mode: `PADDLE_CURRENT_ENDPOINT` (its own entry of the trainer list) and
  `PADDLE_RANK_IN_NODE=0` (one trainer process per pod), read by
  `role_maker._collective_env`; and for `paddle.distributed.launch`, `PADDLE_MASTER`
  (trainer 0's endpoint), `PADDLE_NNODES` and `PADDLE_JOB_ID` (the job's name); and
  `PADDLE_DISTRI_BACKEND=gloo` on a pod that asks for no GPU, as Paddle's launcher sets it
  when it selects no device (`controllers/collective.py`): without it
  `init_parallel_env()` wants NCCL and fails on CPU. A container that sets the variable
  itself keeps its value.
`PADDLE_LOCAL_DEVICE_IDS`/`PADDLE_WORLD_DEVICE_IDS` are optional in Paddle and left to
the GPUs the executor hands out. Other tasks of the job get nothing.

Two exceptions in collective mode, both about Paddle's launcher:
- trainers that share a host (the embedded cluster: all are 127.0.0.1) get no
  `PADDLE_TRAINER_ENDPOINTS`: the launcher takes its node count from that list's distinct
  hosts and its master from its first entry (`launch/plugins/__init__.py`,
  `collective_compatible`), so each pod's launcher would believe it is the only node and
  train alone. A process run without the launcher finds its group through `PADDLE_MASTER`
  (`paddle.distributed.init_parallel_env`);
- an elastic task's pods get no `PADDLE_MASTER`, `PADDLE_NNODES`, `PADDLE_JOB_ID`: they meet
  in etcd (`PADDLE_ELASTIC_*`), and the launcher would let these override its
  `--master etcd://...`, `--nnodes MIN:MAX` and `--job_id` flags (its environment wins).
"""

from __future__ import annotations

from collections.abc import Sequence

from caldera.controller.frameworks.flags import names, port_flag, role_task
from caldera.controller.frameworks.patch import PluginError, PodPatch
from caldera.controller.frameworks.pod import PodRef
from caldera.core.elastic import elastic_range
from caldera.core.objects import Job, TaskSpec
from caldera.core.resources import GPU

DEFAULT_PORT = 36543
PSERVER = "PSERVER"
TRAINER = "TRAINER"


def _roles(job: Job, args: Sequence[str]) -> tuple[TaskSpec | None, TaskSpec]:
    pserver = role_task(job, "paddle", args, "pserver", "pserver")
    trainer = role_task(job, "paddle", args, "trainer", "trainer")
    if trainer is None:
        raise PluginError(f'paddle plugin: job "{job.name}" has no trainer task "trainer" (--trainer=NAME)')
    return pserver, trainer


def ports(job: Job, task: TaskSpec, args: Sequence[str]) -> tuple[int, ...]:
    pserver, trainer = _roles(job, args)
    return (port_flag("paddle", args, DEFAULT_PORT),) if task.name in names(pserver, trainer) else ()


def render(pod: PodRef, args: Sequence[str]) -> PodPatch:
    pserver, trainer = _roles(pod.job, args)
    if pod.task.name not in names(pserver, trainer):
        return PodPatch()
    port = port_flag("paddle", args, DEFAULT_PORT)
    trainers = [pod.endpoint(m, port) for m in pod.members(trainer)]
    own_port = str(pod.addresses.port(pod.name, port))
    role = PSERVER if pserver is not None and pod.task.name == pserver.name else TRAINER
    env = {
        "POD_IP": pod.host(pod.name),
        "PADDLE_PORT": own_port,
        "PADDLE_TRAINER_ENDPOINTS": ",".join(trainers),
        "PADDLE_TRAINERS_NUM": str(trainer.replicas),
        "PADDLE_TRAINER_ID": str(pod.index),
        "TRAINING_ROLE": role,
        "PADDLE_TRAINING_ROLE": role,
    }
    if pserver is not None:
        env["PADDLE_PSERVERS_IP_PORT_LIST"] = ",".join(pod.endpoint(m, port) for m in pod.members(pserver))
    else:
        env.update(
            {
                "PADDLE_CURRENT_ENDPOINT": pod.endpoint(pod.name, port),
                "PADDLE_RANK_IN_NODE": "0",
                "PADDLE_MASTER": trainers[0],
                "PADDLE_NNODES": str(trainer.replicas),
                "PADDLE_JOB_ID": pod.job.name,
            }
        )
        hosts = [pod.host(m) for m in pod.members(trainer)]
        if len(set(hosts)) < len(hosts):  # trainers share a host: the launcher would see one node
            del env["PADDLE_TRAINER_ENDPOINTS"]
        if elastic_range(pod.job, trainer.name) is not None:  # its group is etcd's
            for name in ("PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_JOB_ID"):
                del env[name]
        if not _uses_gpus(pod.task) and not _sets(pod.task, "PADDLE_DISTRI_BACKEND"):
            env["PADDLE_DISTRI_BACKEND"] = "gloo"
    return PodPatch(env=env)


def _uses_gpus(task: TaskSpec) -> bool:
    spec = task.template.spec
    return spec.requests().get(GPU, 0.0) > 0 or any(c.limits.get(GPU, 0.0) > 0 for c in spec.containers)


def _sets(task: TaskSpec, name: str) -> bool:
    return any(var.name == name for c in task.template.spec.containers for var in c.env)
