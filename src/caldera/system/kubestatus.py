"""Status written back to the API server: Jobs, PodGroups (created, updated, deleted) and Queues.

After the control plane settled, `flush_podgroups(plane)` (before pods are written) and
`flush(plane)` (after) write what changed since the last flush, many requests at once: the `status`
subresource of each Job whose status changed (a merge patch), each PodGroup the plane made (created,
owned by its Job, before any pod of it) or changed or dropped, and each Queue whose counts or state
changed. What was written is remembered, so an idle turn writes nothing; a failed write is tried
again at the next flush. Only the jobs the plane touched (`touched(keys)`, from `take_touched`) and
those whose write ended or failed are looked at, so a turn costs what changed, not what exists; the
queues' counts of PodGroups by phase are kept up to date the same way.

Only the creations of Jobs' PodGroups are waited for (pods need their group); a group made for another
operator's pod, which exists already, is created in the background like a status. Status writes (Jobs, PodGroups,
Queues) are sent on their own pool, of fewer threads, and not waited for: their results are taken
at the next flush, so the loop goes on placing and binding while they are written, and they never
take all of the API server's attention from bindings.

Invariant: a Job's status in the API server is one the plane held (never a mixture of two
turns); at most one write per object is in flight (never two racing); a PodGroup exists in the
API server before any pod that names it is created.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from caldera.backends.kube.client import JSON, KubeClient, KubeError, NotFound, resource_path
from caldera.backends.kube.convert import job_status_to_api, podgroup_status_to_api, podgroup_to_api
from caldera.controller import count_podgroup
from caldera.core import objects as o
from caldera.system.control import ControlPlane

log = logging.getLogger("caldera.kube.status")
JOBS = ("batch.volcano.sh/v1alpha1", "jobs")
PODGROUPS = (o.SCHEDULING_API, "podgroups")
QUEUES = (o.SCHEDULING_API, "queues")
RETRY = 5.0  # seconds before a failed creation of a group made for another operator's pod is tried again
Seen = tuple[str, int, str, int, int, int]  # a PodGroup's status as compared: phase, conditions, last reason, counts


class StatusWriter:
    def __init__(
        self,
        kube: KubeClient,
        pool: ThreadPoolExecutor,
        status_pool: ThreadPoolExecutor,
        now: Callable[[], float],
    ) -> None:
        self.kube = kube
        self.now = now
        self.pool = pool  # PodGroup creations, waited for
        self.status_pool = status_pool  # status writes, not waited for
        # (kind, key) → the write in flight, the job it is about, and what to do with its result (loop thread)
        self._inflight: dict[tuple[str, str], tuple[Future[Any], str, Callable[[Any], None]]] = {}
        self._ended: deque[tuple[str, str]] = deque()  # writes whose future is done, for `collect` (any thread)
        self._creating: list[tuple[str, o.PodGroup, Seen, Future[JSON]]] = []
        self._jobs: dict[str, tuple[object, JSON]] = {}  # job key → (the status object, what was written)
        self._groups: dict[str, Seen] = {}  # podgroup key → its status as written (`_seen`)
        self._group_uids: dict[str, str] = {}  # podgroup key → uid in the API server
        self._group_of: dict[str, str] = {}  # job key → the key of its PodGroup in the API server
        self._queues: dict[str, JSON] = {}
        # Job keys whose job or PodGroup may differ from what was written: the plane's touched jobs
        # (`take_touched`), and those whose write failed or ended while another change waited. Only these are
        # looked at, so a turn costs what changed, not what exists.
        self._dirty_groups: set[str] = set()
        self._dirty_jobs: set[str] = set()
        self._counted: dict[str, tuple[str, str]] = {}  # job key → (queue, phase) of its PodGroup, counted
        self._queue_counts: dict[str, Counter[str]] = {}  # queue → its PodGroups by phase
        self.rejected: dict[str, JSON] = {}  # job key → a status the controller wrote for a job it refused
        # podgroup key → the ownerReferences of a group made for another operator's pod (not owned by a Job)
        self.group_owners: dict[str, list[JSON]] = {}
        self._group_failed: dict[str, float] = {}  # podgroup key → when its creation (for such a pod) failed
        # Keys of other operators' PodGroups: their status is written, but caldera never deletes them (nor the groups
        # it made for their pods, which go with their owners): the plane lets one go once the API server deleted it.
        self.not_ours: set[str] = set()

    def adopt_podgroup(self, pg: JSON) -> None:
        meta = pg["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        status = pg.get("status") or {}
        self._group_uids[key] = str(meta.get("uid", ""))
        conditions = status.get("conditions") or []
        self._groups[key] = (
            str(status.get("phase", "")),
            len(conditions),
            str(conditions[-1].get("reason", "")) if conditions else "",
            int(status.get("running") or 0),
            int(status.get("succeeded") or 0),
            int(status.get("failed") or 0),
        )

    def adopt_job_status(self, job: o.Job) -> None:
        """The status the API server holds for a restored job is the plane's: nothing to write."""
        self._jobs[job.key] = (job.status, job_status_to_api(job.status))

    def forget_job(self, key: str) -> None:
        self._jobs.pop(key, None)
        self.rejected.pop(key, None)

    def flush_podgroups(self, plane: ControlPlane) -> dict[str, Future[JSON]]:
        """PodGroups made, changed or dropped: first, so that a pod never exists without its group.

        The creations are sent, not waited for: job key → the creation of its PodGroup, for the pods to wait
        on (each job's pods go as soon as its group exists); `podgroups_created()` takes their results."""
        self.collect()
        return self._podgroups(plane)

    def podgroups_created(self) -> None:
        """Wait for the PodGroup creations `flush_podgroups` sent, and note what was made."""
        creating, self._creating = self._creating, []
        for job_key, pg, seen, future in creating:
            try:
                result = future.result()
            except KubeError as e:
                log.warning("creating podgroup %s failed: %s", pg.key, e)
                self._dirty_groups.add(job_key)  # tried again at the next flush
                continue
            self._group_uids[pg.key] = str(result["metadata"].get("uid", ""))
            self._group_of[job_key] = pg.key
            self._groups[pg.key] = seen  # written with the object: no update needed for it
            self._dirty_groups.add(job_key)  # changed while it was being created? (compared at the next flush)

    def flush(self, plane: ControlPlane) -> None:
        """Everything else: the status of Jobs and Queues."""
        self.collect()
        self._job_statuses(plane)
        self._queue_statuses(plane)

    @property
    def writing(self) -> int:
        """Status writes in flight."""
        return len(self._inflight)

    def collect(self) -> None:
        """Take the results of the status writes that ended (on the loop thread); their jobs are looked at again."""
        while self._ended:
            kind, key = self._ended.popleft()
            future, job_key, done = self._inflight.pop((kind, key))
            try:
                result: Any = future.result()
            except KubeError as e:
                result = e
            done(result)
            if job_key:  # not a queue's
                (self._dirty_jobs if kind == "job" else self._dirty_groups).add(job_key)

    def touched(self, job_keys: set[str]) -> None:
        """These jobs, their PodGroups or pods changed in the plane (`take_touched`): look at them at the next flush."""
        self._dirty_groups |= job_keys
        self._dirty_jobs |= job_keys

    def _send(self, kind: str, key: str, job_key: str, fn: Callable[[], JSON], done: Callable[[Any], None]) -> None:
        """Write in the background; `done(result or KubeError)` runs at a later `collect`."""
        future = self.status_pool.submit(fn)
        self._inflight[(kind, key)] = (future, job_key, done)
        future.add_done_callback(lambda _: self._ended.append((kind, key)))

    def _busy(self, kind: str, key: str) -> bool:
        return (kind, key) in self._inflight

    # ------------------------------------------------------------ podgroups

    def _podgroups(self, plane: ControlPlane) -> dict[str, Future[JSON]]:
        gates: dict[str, Future[JSON]] = {}
        gone: list[tuple[str, str]] = []  # (job key, podgroup key) of groups the plane no longer has
        dirty, self._dirty_groups = self._dirty_groups, set()
        for job_key in dirty:
            pg = plane.podgroups.get(job_key)
            written = self._group_of.get(job_key)
            if written is not None and (pg is None or pg.key != written):
                if self._busy("podgroup", written):
                    self._dirty_groups.add(job_key)  # deleted once its update ended
                    continue
                if written in self.not_ours or written in self.group_owners:
                    self._forget_group(job_key, written)  # gone from the API already: never deleted by caldera
                else:
                    gone.append((job_key, written))
            if pg is None:
                continue
            count_podgroup(pg, plane.job_pods.get(job_key, {}).values())
            key = pg.key
            if key not in self._group_uids and key in self.group_owners:
                # A group made for another operator's pod: nothing waits for it (the pod exists), so it is written
                # like a status, in the background, and the loop goes on binding.
                if self.now() - self._group_failed.get(key, -RETRY) < RETRY:
                    self._dirty_groups.add(job_key)  # tried again once RETRY passed, not at every turn
                elif not self._busy("podgroup", key):
                    create = functools.partial(self._create_group, (job_key, pg), plane)
                    self._send("podgroup", key, job_key, create, self._group_created(job_key, pg, _seen(pg)))
                continue
            if key not in self._group_uids:
                future = self.pool.submit(self._create_group, (job_key, pg), plane)
                self._creating.append((job_key, pg, _seen(pg), future))
                gates[job_key] = future
                continue
            self._group_of[job_key] = key
            if self._busy("podgroup", key):
                continue  # looked at again when that write ended
            seen = _seen(pg)
            if self._groups.get(key) != seen:
                self._send("podgroup", key, job_key, self._update_group(pg), self._group_updated(key, seen))
        keys = [key for _, key in gone]
        for (job_key, key), result in zip(gone, self._parallel(self._delete_group, keys, plane), strict=True):
            if not isinstance(result, Exception) or isinstance(result, NotFound):
                self._forget_group(job_key, key)
            else:
                self._dirty_groups.add(job_key)  # tried again at the next flush
        return gates

    def _forget_group(self, job_key: str, key: str) -> None:
        self._group_uids.pop(key, None)
        self._groups.pop(key, None)
        self.not_ours.discard(key)
        self.group_owners.pop(key, None)
        self._group_failed.pop(key, None)
        if self._group_of.get(job_key) == key:
            del self._group_of[job_key]

    def _create_group(self, item: tuple[str, o.PodGroup], plane: ControlPlane) -> JSON:
        job_key, pg = item
        owners = self.group_owners.get(pg.key)
        if owners is not None:
            body = podgroup_to_api(pg, owners=owners)
        else:
            job = plane.jobs.get(job_key)
            body = podgroup_to_api(pg, job.metadata.uid if job is not None else "")
        body["status"] = podgroup_status_to_api(pg)
        path = resource_path(*PODGROUPS, namespace=pg.metadata.namespace)
        try:
            return self.kube.create(path, body)
        except KubeError as e:
            if getattr(e, "code", 0) != 409:
                raise
            return self.kube.get(f"{path}/{pg.metadata.name}")  # made by a predecessor that died before noting it

    def _group_created(self, job_key: str, pg: o.PodGroup, seen: Seen) -> Callable[[Any], None]:
        def done(result: Any) -> None:
            if isinstance(result, Exception):
                log.warning("creating podgroup %s failed (tried again in %g s): %s", pg.key, RETRY, result)
                self._group_failed[pg.key] = self.now()
                return
            self._group_failed.pop(pg.key, None)
            self._group_uids[pg.key] = str(result["metadata"].get("uid", ""))
            self._group_of[job_key] = pg.key
            self._groups[pg.key] = seen

        return done

    def _update_group(self, pg: o.PodGroup) -> Callable[[], JSON]:
        # With the object, not through `/status`: Volcano's PodGroup CRD (and caldera's, of the same shape) has no
        # status subresource, so `podgroups/NAME/status` answers 404 there.
        path = resource_path(*PODGROUPS, namespace=pg.metadata.namespace, name=pg.metadata.name)
        body = {"status": podgroup_status_to_api(pg)}
        return lambda: self.kube.patch(path, body)

    def _group_updated(self, key: str, seen: Seen) -> Callable[[Any], None]:
        def done(result: Any) -> None:
            if not isinstance(result, Exception) or isinstance(result, NotFound):
                self._groups[key] = seen

        return done

    def _delete_group(self, key: str, plane: ControlPlane) -> JSON:
        ns, name = key.split("/", 1)
        return self.kube.delete(resource_path(*PODGROUPS, namespace=ns, name=name))

    # ------------------------------------------------------------ jobs

    def _job_statuses(self, plane: ControlPlane) -> None:
        dirty, self._dirty_jobs = self._dirty_jobs, set()
        for key in dirty:
            self._count(key, plane.podgroups.get(key))
            job = plane.jobs.get(key)
            if job is None:
                self._jobs.pop(key, None)
                continue
            written = self._jobs.get(key)
            if (written is not None and written[0] is job.status) or self._busy("job", key):
                continue  # a busy one is looked at again when its write ended
            body = job_status_to_api(job.status, _task_counts(plane, key))
            if written is not None and written[1] == body:
                self._jobs[key] = (job.status, body)
                continue
            path = resource_path(*JOBS, namespace=job.namespace, name=job.name, subresource="status")
            self._send("job", key, key, _patch(self.kube, path, {"status": body}), self._job_written(plane, job, body))

    def _job_written(self, plane: ControlPlane, job: o.Job, body: JSON) -> Callable[[Any], None]:
        status = job.status

        def done(result: Any) -> None:
            if isinstance(result, Exception) and not isinstance(result, NotFound):
                log.warning("writing the status of job %s failed: %s", job.key, result)
            elif plane.jobs.get(job.key) is job:  # not a job deleted meanwhile (nor one made again under its name)
                self._jobs[job.key] = (status, body)

        return done

    def write_rejection(self, key: str, status: JSON) -> None:
        ns, name = key.split("/", 1)
        try:
            self.kube.patch(resource_path(*JOBS, namespace=ns, name=name, subresource="status"), {"status": status})
            self.rejected[key] = status
        except KubeError as e:
            log.warning("writing the rejection of job %s failed: %s", key, e)

    # ------------------------------------------------------------ queues

    def _count(self, job_key: str, pg: o.PodGroup | None) -> None:
        """Keep the queues' PodGroup counts by phase current for a job looked at (its group made, moved or gone)."""
        now = (pg.queue, pg.phase) if pg is not None else None
        old = self._counted.get(job_key)
        if old == now:
            return
        if old is not None:
            self._queue_counts[old[0]][old[1]] -= 1
            del self._counted[job_key]
        if now is not None:
            self._queue_counts.setdefault(now[0], Counter())[now[1]] += 1
            self._counted[job_key] = now

    def _queue_statuses(self, plane: ControlPlane) -> None:
        for name, queue in plane.queues.items():
            if self._busy("queue", name):
                continue
            c = self._queue_counts.get(name, Counter())
            body = {
                "state": queue.state,
                "pending": c[o.PG_PENDING],
                "inqueue": c[o.PG_INQUEUE],
                "running": c[o.PG_RUNNING],
                "unknown": c[o.PG_UNKNOWN],
                "completed": c[o.PG_COMPLETED],
            }
            if self._queues.get(name) != body:
                path = resource_path(*QUEUES, name=name, subresource="status")
                self._send(
                    "queue", name, "", _patch(self.kube, path, {"status": body}), self._queue_written(name, body)
                )

    def _queue_written(self, name: str, body: JSON) -> Callable[[Any], None]:
        def done(result: Any) -> None:
            if not isinstance(result, Exception) or isinstance(result, NotFound):
                self._queues[name] = body

        return done

    # ------------------------------------------------------------ plumbing

    def _parallel(self, fn: Callable[[Any, ControlPlane], Any], items: list[Any], plane: ControlPlane) -> list[Any]:
        def call(item: Any) -> Any:
            try:
                return fn(item, plane)
            except KubeError as e:
                return e

        if len(items) <= 1:
            return [call(i) for i in items]
        return list(self.pool.map(call, items))


def _seen(pg: o.PodGroup) -> Seen:
    """What of a PodGroup's status is compared with what was written."""
    return (pg.phase, len(pg.conditions), pg.conditions[-1].reason if pg.conditions else "", pg.running,
            pg.succeeded, pg.failed)  # fmt: skip


def _patch(kube: KubeClient, path: str, body: JSON) -> Callable[[], JSON]:
    return lambda: kube.patch(path, body)


def _task_counts(plane: ControlPlane, job_key: str) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for pod in plane.job_pods.get(job_key, {}).values():
        phase = counts.setdefault(pod.task, {})
        phase[pod.status.phase] = phase.get(pod.status.phase, 0) + 1
    return counts
