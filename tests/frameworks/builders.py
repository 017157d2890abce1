"""Keyword-only builders for framework plugin tests, and a port pool standing in for the embedded executor."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from caldera.controller.frameworks import PodPatch, job_ports, render
from caldera.core.addresses import Addresses, MappedAddresses
from caldera.core.objects import (
    Container,
    ContainerPort,
    Job,
    JobSpec,
    ObjectMeta,
    PodSpec,
    PodTemplate,
    TaskSpec,
)
from caldera.core.resources import GPU, parse_resource_list


def make_task(*, name: str = "worker", replicas: int = 1, ports: Sequence[int] = (), gpus: int = 0) -> TaskSpec:
    requests = parse_resource_list({"cpu": "1", GPU: str(gpus)} if gpus else {"cpu": "1"})
    container = Container(
        name=name,
        command=("python", "train.py"),
        requests=requests,
        limits=requests,
        ports=tuple(ContainerPort(container_port=p) for p in ports),
    )
    return TaskSpec(name=name, replicas=replicas, template=PodTemplate(spec=PodSpec(containers=(container,))))


def make_job(
    *,
    name: str = "job",
    tasks: Sequence[TaskSpec] | None = None,
    plugins: Mapping[str, Sequence[str]] | None = None,
) -> Job:
    tasks = tuple(tasks) if tasks is not None else (make_task(),)
    spec = JobSpec(
        tasks=tasks,
        min_available=sum(t.replicas for t in tasks),
        plugins={k: tuple(v) for k, v in (plugins or {}).items()},
    )
    return Job(metadata=ObjectMeta(name=name), spec=spec)


class PortPool:
    """Free host ports handed out in order, as the embedded executor would: never one twice."""

    def __init__(self, first: int = 40000) -> None:
        self.next = first

    def addresses(self, job: Job) -> MappedAddresses:
        ports: dict[tuple[str, int], int] = {}
        for key in job_ports(job):
            ports[key] = self.next
            self.next += 1
        return MappedAddresses("127.0.0.1", ports)


def render_pod(job: Job, task: str, index: int, addresses: Addresses, pod_dir: str = "") -> PodPatch:
    spec = job.spec.task(task)
    assert spec is not None, task
    return render(job, spec, index, addresses, pod_dir)


def render_all(job: Job, addresses: Addresses) -> dict[str, PodPatch]:
    """Every pod's patch, by pod name."""
    return {f"{job.name}-{t.name}-{i}": render(job, t, i, addresses) for t in job.spec.tasks for i in range(t.replicas)}
