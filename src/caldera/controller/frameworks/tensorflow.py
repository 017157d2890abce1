"""Volcano's `tensorflow` plugin: `TF_CONFIG` for `tf.distribute` cluster resolvers.

Flags `--ps`, `--worker`, `--chief`, `--evaluator` name the task playing each role
(default: the role's own name) and `--port` the container port (default 2222). Every
pod of a role's task gets, as compact JSON in Volcano's key order,
`{"cluster": {"ps": [...], "worker": [...], "chief": [...], "evaluator": [...]},
"task": {"type": <role>, "index": <index>}}` with `host:port` endpoints through the
executor's addresses; roles whose task is absent or has no replicas are left out of
`cluster`. A job of one task with one replica is not distributed and gets nothing,
as in Volcano; so do tasks that play no role.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from caldera.controller.frameworks.flags import port_flag, role_task
from caldera.controller.frameworks.patch import PodPatch
from caldera.controller.frameworks.pod import PodRef
from caldera.core.objects import Job, TaskSpec

DEFAULT_PORT = 2222
ROLES = ("ps", "worker", "chief", "evaluator")


def _roles(job: Job, args: Sequence[str]) -> list[tuple[str, TaskSpec]]:
    """(role, task) for each role whose task exists with replicas, in Volcano's order."""
    out: list[tuple[str, TaskSpec]] = []
    for role in ROLES:
        task = role_task(job, "tensorflow", args, role, role)
        if task is not None and task.replicas > 0:
            out.append((role, task))
    return out


def _distributed(job: Job) -> bool:
    tasks = job.spec.tasks
    return not (len(tasks) == 1 and tasks[0].replicas == 1)


def ports(job: Job, task: TaskSpec, args: Sequence[str]) -> tuple[int, ...]:
    if not _distributed(job) or all(t.name != task.name for _, t in _roles(job, args)):
        return ()
    return (port_flag("tensorflow", args, DEFAULT_PORT),)


def render(pod: PodRef, args: Sequence[str]) -> PodPatch:
    if not _distributed(pod.job):
        return PodPatch()
    roles = _roles(pod.job, args)
    mine = next((role for role, task in roles if task.name == pod.task.name), None)
    if mine is None:
        return PodPatch()
    port = port_flag("tensorflow", args, DEFAULT_PORT)
    cluster = {role: [pod.endpoint(m, port) for m in pod.members(task)] for role, task in roles}
    config = {"cluster": cluster, "task": {"type": mine, "index": pod.index}}
    return PodPatch(env={"TF_CONFIG": json.dumps(config, separators=(",", ":"))})
