"""The framework plugins by name, and rendering one pod's patch from every plugin its job names.

An executor uses this in two steps, before it starts any pod of a job:
1. `job_ports(job)` (or `ports_of` per task): every (pod, container port) that must be
   reachable, from the manifest's `containers[].ports` and the plugins' flags and
   defaults; it allocates a host port for each (or keeps them, on Kubernetes);
2. `render(job, task, index, addresses)` for each pod: the environment and files to add.
Both are pure: the same job and addresses give the same answer, so a pod re-created
after a restart is wired exactly as before.

Precedence is the executor's: Volcano appends plugin variables after the container's
own, and Kubernetes lets the later of two equal names win, so a plugin's value wins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from caldera.controller.frameworks import env, kubeflow, mpi, paddle, pytorch, ssh, svc, tensorflow
from caldera.controller.frameworks.patch import PluginError, PodPatch
from caldera.controller.frameworks.pod import PodRef, pod_name
from caldera.core.addresses import Addresses
from caldera.core.objects import Job, TaskSpec

# Plugins that start a training framework: their processes' output must reach the log as it is written.
FRAMEWORKS = frozenset({"pytorch", "tensorflow", "paddle", "mpi", "kubeflow"})


@dataclass(frozen=True, slots=True)
class Plugin:
    render: Callable[[PodRef, Sequence[str]], PodPatch]
    ports: Callable[[Job, TaskSpec, Sequence[str]], tuple[int, ...]]


def build_registry() -> dict[str, Plugin]:
    """Every job plugin caldera knows, by the name a manifest's `spec.plugins` uses."""
    return {
        "env": Plugin(env.render, env.ports),
        "svc": Plugin(svc.render, svc.ports),
        "ssh": Plugin(ssh.render, ssh.ports),
        "pytorch": Plugin(pytorch.render, pytorch.ports),
        "tensorflow": Plugin(tensorflow.render, tensorflow.ports),
        "mpi": Plugin(mpi.render, mpi.ports),
        "paddle": Plugin(paddle.render, paddle.ports),
        "kubeflow": Plugin(kubeflow.render, kubeflow.ports),
    }


PLUGINS: Mapping[str, Plugin] = build_registry()


def _plugin(name: str) -> Plugin:
    plugin = PLUGINS.get(name)
    if plugin is None:
        raise PluginError(f"unknown job plugin {name!r}; known: {', '.join(PLUGINS)}")
    return plugin


def ports_of(job: Job, task: TaskSpec) -> tuple[int, ...]:
    """The container ports each pod of `task` must have mapped: the manifest's, then the plugins', once each.

    Order matters: the first is the task's primary port (`svc`'s `VC_<TASK>_ADDRS`)."""
    found = [p.container_port for c in task.template.spec.containers for p in c.ports]
    for name, args in job.spec.plugins.items():
        found.extend(_plugin(name).ports(job, task, args))
    return tuple(dict.fromkeys(found))


def job_ports(job: Job) -> tuple[tuple[str, int], ...]:
    """Every (pod name, container port) of the job that needs a host port, in task and index order."""
    out: list[tuple[str, int]] = []
    for task in job.spec.tasks:
        task_ports = ports_of(job, task)
        for index in range(task.replicas):
            out.extend((pod_name(job.name, task.name, index), port) for port in task_ports)
    return tuple(out)


def render(job: Job, task: TaskSpec, index: int, addresses: Addresses, pod_dir: str = "") -> PodPatch:
    """What every plugin of `job` adds to pod `index` of `task`.

    `pod_dir`, when given, makes file paths in environment values absolute (the files
    themselves are always relative to the pod's directory). Raises PluginError for a
    job the plugins cannot wire (an unknown plugin, a missing role task, two masters)."""
    if job.spec.task(task.name) is None:
        raise PluginError(f'task "{task.name}" is not a task of job "{job.name}"')
    if not 0 <= index < task.replicas:
        raise PluginError(f'task "{task.name}" of job "{job.name}" has no replica {index} (replicas: {task.replicas})')
    ports = {t.name: ports_of(job, t) for t in job.spec.tasks}
    pod = PodRef(job=job, task=task, index=index, addresses=addresses, ports=ports, pod_dir=pod_dir)
    patch = PodPatch()
    for name, args in job.spec.plugins.items():
        patch = patch.merge(_plugin(name).render(pod, args))
    if FRAMEWORKS.intersection(job.spec.plugins):
        patch = patch.merge(PodPatch(env={"PYTHONUNBUFFERED": "1"}))
    return patch
