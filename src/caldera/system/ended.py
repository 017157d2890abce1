"""Pods that ended and were removed, kept for people until their job is deleted (kubectl and Arena keep them).

The control plane removes a pod once it is stopped (a job that completed stops its parameter
servers; a restart stops every pod; an eviction, a scale-in): the pod is then gone for the
controller and the scheduler. People still want to see it, with how it ended and its log:
this book keeps the last pod of each name as it was when it went, its status rewritten to
its end (phase by exit code, the exit code, when, and why: Stopped or Evicted).

Invariants: a record belongs to one incarnation of its job (its uid), so a job created again
under the same name shows none of its predecessor's; a live pod of the same name hides the
record (`caldera get` lists each pod once); only pods that ran are kept (a pod that never
started has no log and no end), and only those the job still has (an elastic task scaled in
has fewer: its highest indices are gone).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from caldera.core import objects as o

STOPPED = "Stopped"  # the control plane asked for it: the job completed, restarted, was scaled in or deleted
EVICTED = "Evicted"  # someone else removed it: a preemption, a lost node, a fault


@dataclass(frozen=True, slots=True)
class EndedPod:
    pod: o.Pod  # as it was when it went, with its end in its status
    job_uid: str
    attempt: int  # the number of its last attempt


class EndedPods:
    def __init__(self) -> None:
        self._pods: dict[str, EndedPod] = {}  # pod key → its last end
        self._by_job: dict[str, dict[str, EndedPod]] = {}  # job key → pod key → its last end (the same records)

    def gone(self, pod: o.Pod, job_uid: str, exit_code: int | None, asked: bool, now: float, attempt: int) -> None:
        """`pod` was removed; `exit_code` is its process's (None: it never ran, and is not kept)."""
        if not pod.node_name or exit_code is None:
            return
        reason = STOPPED if asked else EVICTED
        status = replace(
            pod.status,
            phase=o.POD_SUCCEEDED if exit_code == 0 else o.POD_FAILED,
            exit_code=exit_code,
            finish_time=now,
            reason=reason,
            message=f"{'stopped by its job' if asked else 'evicted'}, exit code {exit_code}",
        )
        self._keep(EndedPod(replace(pod, status=status, deletion_timestamp=None), job_uid, attempt))

    def restore(self, ended: EndedPod) -> None:
        self._keep(ended)

    def _keep(self, ended: EndedPod) -> None:
        self._pods[ended.pod.key] = ended
        self._by_job.setdefault(ended.pod.job_key, {})[ended.pod.key] = ended

    def of_job(self, job: o.Job, live: Iterable[str]) -> list[o.Pod]:
        """The ended pods of this incarnation of `job` that it still has and no live pod (by name) replaced."""
        hidden = set(live)
        replicas = {t.name: t.replicas for t in job.spec.tasks}
        return [
            e.pod
            for e in self._by_job.get(job.key, {}).values()
            if e.job_uid == job.metadata.uid and e.pod.name not in hidden and e.pod.index < replicas.get(e.pod.task, 0)
        ]

    def records(self) -> list[EndedPod]:
        return list(self._pods.values())

    def of_key(self, job_key: str) -> list[EndedPod]:
        """The records of the job of this key (of any incarnation not forgotten yet)."""
        return list(self._by_job.get(job_key, {}).values())

    def forget_gone_jobs(self, jobs: dict[str, o.Job]) -> None:
        """Drop the records of jobs deleted (or created again: another uid) since, and of pods scaled in."""
        for key, e in list(self._pods.items()):
            job = jobs.get(e.pod.job_key)
            task = job.spec.task(e.pod.task) if job is not None else None
            if job is None or job.metadata.uid != e.job_uid or task is None or e.pod.index >= task.replicas:
                del self._pods[key]
                of_job = self._by_job[e.pod.job_key]
                del of_job[key]
                if not of_job:
                    del self._by_job[e.pod.job_key]
