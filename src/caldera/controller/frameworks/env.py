"""Volcano's `env` plugin: each pod learns its index within its task.

`VK_TASK_INDEX` is the name Volcano kept for compatibility; `VC_TASK_INDEX` the current one.
"""

from __future__ import annotations

from collections.abc import Sequence

from caldera.controller.frameworks.patch import PodPatch
from caldera.controller.frameworks.pod import PodRef
from caldera.core.objects import Job, TaskSpec


def render(pod: PodRef, args: Sequence[str]) -> PodPatch:
    index = str(pod.index)
    return PodPatch(env={"VK_TASK_INDEX": index, "VC_TASK_INDEX": index})


def ports(job: Job, task: TaskSpec, args: Sequence[str]) -> tuple[int, ...]:
    return ()
