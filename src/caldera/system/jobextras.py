"""What a job has on this machine besides its pods' processes: its TensorBoard and its directories.

Each turn of the control loop compares the jobs the plane has with those it had: a new
job gets its TensorBoard (if it asked for one); a job that is gone (deleted by a user or
by its TTL) has its TensorBoard stopped, and once none of its processes is left (no pod
of it in the plane, none the executor runs, no TensorBoard) its pods' directories
`<home>/pods/<ns>/<pod>/` (logs of every attempt, files) and its own `<home>/jobs/<ns>/<job>/`
are removed and the runtime forgets its pods' attempt numbers. So a new job of the same
name starts clean: until then it is refused with `StillDeleting` (a Conflict), which
`when_clean` waits out.

After a restart, what a previous daemon had deleted but not cleaned up is found again:
pod records without a job are dropped from the store (those of pods still stopping on a node
once they are gone: until then they hold their resources), stray processes (adopted by the
executor, but of no pod the plane has) are stopped, and directories no job owns are
removed once nothing runs in them.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from caldera.backends.sqlite_store import SqliteStore
from caldera.controller import pod_name
from caldera.core import objects as o
from caldera.system.api import Conflict
from caldera.system.control import ControlPlane
from caldera.system.effects import HeldEffects
from caldera.system.runtime import LocalRuntime
from caldera.system.tensorboard import TensorBoards, job_dir
from caldera.utils.clock import Clock

T = TypeVar("T")
STRAY_GRACE = 10.0  # seconds a stray pod gets between SIGTERM and SIGKILL


class StillDeleting(Conflict):
    """A job of this name was deleted and its processes are still stopping."""


class JobExtras:
    """Called on the control loop (but `when_clean`, which waits on the caller's thread)."""

    def __init__(
        self,
        home: Path,
        plane: ControlPlane,
        runtime: LocalRuntime,
        executor: HeldEffects,  # its running() counts the starts not done yet
        tensorboards: TensorBoards,
        clock: Clock,
    ) -> None:
        self.home = home
        self.plane = plane
        self.runtime = runtime
        self.executor = executor
        self.tensorboards = tensorboards
        self.clock = clock
        self._known: dict[str, o.Job] = {}
        self._known_version = -1  # the plane's jobs_version when `_known` was last compared with its jobs
        self._pending: dict[str, set[str]] = {}  # gone job key → names of the pods whose directories go
        self._stray_dirs: list[Path] = []  # found at start: no job owns them
        self._clean = threading.Condition()

    # ------------------------------------------------------------ start

    def forget_orphans(self, store: SqliteStore) -> None:
        """Before adoption: drop the records of pods and podgroups whose job is gone (but of pods the plane
        restored as still stopping: `PlaneStore.restore`), and of nodes no more."""
        for kind in ("Pod", "PodGroup"):
            for s in store.list(kind):
                key = f"{s.namespace}/{s.body.get('spec', {}).get('job', '')}"
                if key not in self.plane.jobs:
                    if kind == "Pod":
                        self._pending.setdefault(key, set()).add(s.name)
                        if f"{s.namespace}/{s.name}" in self.plane.pods:
                            continue  # still stopping: its record goes with it
                    store.delete(kind, s.namespace, s.name)
        for s in store.list("Node"):
            if s.name not in self.plane.nodes:
                store.delete("Node", "", s.name)

    def start(self) -> None:
        """After adoption: stop stray pods, find unowned directories, run the restored jobs' TensorBoards."""
        for key in self.executor.running():
            if key not in self.plane.pods:
                namespace, _, pod = key.partition("/")
                self._pending.setdefault(f"{namespace}/{pod}", set()).add(pod)
                self.executor.stop(key, grace=STRAY_GRACE)
        owned = self._owned_prefixes()
        for where in sorted(self.home.glob("pods/*/*")):
            if where.is_dir() and (where.parent.name, _task_prefix(where.name)) not in owned:
                self._stray_dirs.append(where)
        for where in sorted(self.home.glob("jobs/*/*")):
            if f"{where.parent.name}/{where.name}" not in self.plane.jobs:
                self.tensorboards.stop_recorded(where)
                shutil.rmtree(where, ignore_errors=True)
        for job in self.plane.jobs.values():
            self.tensorboards.ensure(job)
        self._known = dict(self.plane.jobs)
        self.sweep()

    # ------------------------------------------------------------ each turn

    def created(self, job: o.Job) -> None:
        """A job was just created: its TensorBoard starts now (the turn's sweep would, a moment later)."""
        self.tensorboards.ensure(job)
        self._known[job.key] = job

    def busy(self, job_key: str) -> bool:
        """Whether a deleted job of this name still has processes or directories."""
        return job_key in self._pending or (job_key not in self.plane.jobs and job_key in self._known)

    def sweep(self) -> None:
        """Each turn; the job sets are compared only when the plane added or removed one (a turn costs
        what changed, not a pass over every job)."""
        jobs = self.plane.jobs
        if self._known_version != self.plane.jobs_version:
            self._known_version = self.plane.jobs_version
            self._compare(jobs)
        self.tensorboards.check(jobs)
        if self._pending or self._stray_dirs:
            self._clean_up()

    def _compare(self, jobs: dict[str, o.Job]) -> None:
        gone = [self._known.pop(key) for key in self._known.keys() - jobs.keys()]
        left = self._unowned_dirs({job.namespace for job in gone}) if gone else {}
        for job in gone:
            self.tensorboards.stop(job.key)
            pods = {pod_name(job.name, t.name, i) for t in job.spec.tasks for i in range(t.replicas)}
            pods |= set(self.plane.job_pods.get(job.key, {}))
            # directories of pods it had once but not now (an elastic task scaled in), none of another job
            prefixes = {f"{job.name}-{t.name}" for t in job.spec.tasks}
            pods |= {name for name, prefix in left.get(job.namespace, {}).items() if prefix in prefixes}
            self._pending.setdefault(job.key, set()).update(pods)
        for key in jobs.keys() - self._known.keys():
            self.created(jobs[key])

    def _clean_up(self) -> None:
        running = set(self.executor.running())
        done = []
        for key, pods in self._pending.items():
            namespace = key.partition("/")[0]
            keys = {f"{namespace}/{p}" for p in pods}
            if keys & running or keys & self.plane.pods.keys() or not self.tensorboards.stopped(key):
                continue
            for pod_key in keys:
                self.runtime.attempts.pop(pod_key, None)
                shutil.rmtree(self.home / "pods" / pod_key, ignore_errors=True)
            shutil.rmtree(job_dir(self.home, namespace, key.partition("/")[2]), ignore_errors=True)
            done.append(key)
        stray = [where for where in self._stray_dirs if f"{where.parent.name}/{where.name}" not in running]
        for where in stray:
            shutil.rmtree(where, ignore_errors=True)
        self._stray_dirs = [where for where in self._stray_dirs if where not in stray]
        if done:
            with self._clean:
                for key in done:
                    del self._pending[key]
                self._clean.notify_all()

    def when_clean(self, create: Callable[[], T], timeout: float) -> T:
        """`create()`, again while it raises StillDeleting, for up to `timeout` seconds (any thread)."""
        deadline = self.clock.now() + timeout
        while True:
            try:
                return create()
            except StillDeleting:
                left = deadline - self.clock.now()
                if left <= 0:
                    raise
                with self._clean:
                    self._clean.wait(timeout=min(left, 0.5))

    def shutdown(self, stop_pods: bool) -> None:
        """`caldera down` stops the TensorBoards; a daemon stopping without its pods leaves them for the next."""
        if stop_pods:
            self.tensorboards.stop_all()

    # ------------------------------------------------------------ helpers

    def _owned_prefixes(self) -> set[tuple[str, str | None]]:
        """(namespace, `<job>-<task>`) of every task of the plane's jobs: whose pod directories are whose."""
        return {(job.namespace, f"{job.name}-{t.name}") for job in self.plane.jobs.values() for t in job.spec.tasks}

    def _unowned_dirs(self, namespaces: set[str]) -> dict[str, dict[str, str]]:
        """Per namespace, the pod directories that no job of the plane owns: name → `<job>-<task>`."""
        owned = self._owned_prefixes()
        unowned: dict[str, dict[str, str]] = {}
        for namespace in namespaces:
            try:
                with os.scandir(self.home / "pods" / namespace) as entries:  # no stat per entry
                    prefixes = {e.name: _task_prefix(e.name) for e in entries if e.is_dir(follow_symlinks=False)}
            except FileNotFoundError:
                prefixes = {}
            unowned[namespace] = {
                name: prefix
                for name, prefix in prefixes.items()
                if prefix is not None and (namespace, prefix) not in owned
            }
        return unowned


def _task_prefix(pod: str) -> str | None:
    """`<job>-<task>` of a pod named `<job>-<task>-<index>` (its index in decimal digits); None for other names."""
    head, dash, index = pod.rpartition("-")
    return head if dash and index.isdecimal() else None
