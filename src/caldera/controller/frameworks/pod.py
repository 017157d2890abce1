"""The pod being rendered, as the framework plugins see it: its job, task, index, and how to reach its peers.

Every address a plugin writes goes through `Addresses` (`host`, `endpoint`), never a
literal, so the same plugin gives `<pod>.<job>:2222` on Kubernetes and
`127.0.0.1:<allocated port>` on the embedded cluster.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from caldera.core.addresses import Addresses
from caldera.core.objects import Job, TaskSpec


def pod_name(job: str, task: str, index: int) -> str:
    """`<job>-<task>-<index>`, as `caldera.controller.pods.pod_name` (a sibling this L1 leaf does not import)."""
    return f"{job}-{task}-{index}"


def env_key(task: str) -> str:
    """A task name as it appears in Volcano's variable names: `ps-0` → `PS_0`."""
    return task.upper().replace("-", "_")


@dataclass(frozen=True, slots=True)
class PodRef:
    job: Job
    task: TaskSpec
    index: int
    addresses: Addresses
    ports: Mapping[str, tuple[int, ...]]  # task name → the container ports each of its pods has mapped
    pod_dir: str = ""  # where the executor puts the pod's files; "" keeps paths relative

    @property
    def name(self) -> str:
        return pod_name(self.job.name, self.task.name, self.index)

    def members(self, task: TaskSpec) -> list[str]:
        """The pod names of every replica of `task`, in index order."""
        return [pod_name(self.job.name, task.name, i) for i in range(task.replicas)]

    def host(self, pod: str) -> str:
        return self.addresses.host(pod)

    def endpoint(self, pod: str, port: int) -> str:
        """`host:port` at which `pod`'s container port `port` is reached by its peers."""
        return f"{self.addresses.host(pod)}:{self.addresses.port(pod, port)}"

    def path(self, relative: str) -> str:
        """A file of this pod as an environment value: absolute under `pod_dir` when the caller gave one."""
        return posixpath.join(self.pod_dir, relative) if self.pod_dir else relative
