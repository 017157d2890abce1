"""Volcano's `ssh` plugin, accepted and deliberately empty.

Volcano generates an RSA key pair per job and mounts it with an ssh `config` so that
an MPI launcher can ssh into its workers. On the embedded cluster every pod runs on
this host, so `mpirun` starts ranks locally from the hostfile and needs no keys; and a
key pair is random, which a pure renderer cannot produce. A backend that needs ssh
(a real multi-host cluster) provides the keys itself, the way Kubernetes mounts a Secret.
"""

from __future__ import annotations

from collections.abc import Sequence

from caldera.controller.frameworks.patch import PodPatch
from caldera.controller.frameworks.pod import PodRef
from caldera.core.objects import Job, TaskSpec


def render(pod: PodRef, args: Sequence[str]) -> PodPatch:
    return PodPatch()


def ports(job: Job, task: TaskSpec, args: Sequence[str]) -> tuple[int, ...]:
    return ()
