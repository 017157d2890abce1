"""When the node's zygotes may stop: no elastic pod runs, and every job that started one is deleted.

A node's zygote (launcher/zygote.py) has imported the training stack once; every elastic pod's
launcher forks its workers from it. Stopping it when the last elastic pod's process ends is too
early when that pod comes back: a single-pod elastic job whose pod is killed gets its pod
re-created, and that pod would import everything again. So the runtime stops the zygotes at once
only when nothing can ask for them again; while a job that started an elastic pod still exists
(running, restarting, or finished and kept), an unused zygote exits by itself after
`zygotestarter.IDLE_EXIT` seconds without a client, unless a re-created pod asks for it first.
"""

from __future__ import annotations


class ZygoteUsers:
    """Which elastic pods, of which jobs, were started with the node's zygote starter."""

    def __init__(self) -> None:
        self._pods: set[str] = set()  # pods whose process runs
        self._jobs: set[str] = set()  # jobs that started one, until they are deleted

    def started(self, pod_key: str, job_key: str) -> None:
        self._pods.add(pod_key)
        self._jobs.add(job_key)

    def released(self, pod_key: str) -> bool:
        """The pod's process is gone: True when the zygotes should stop now."""
        if pod_key not in self._pods:
            return False
        self._pods.discard(pod_key)
        return not self._pods and not self._jobs

    def job_deleted(self, job_key: str) -> bool:
        """The job is gone: True when the zygotes should stop now."""
        if job_key not in self._jobs:
            return False
        self._jobs.discard(job_key)
        return not self._pods and not self._jobs
