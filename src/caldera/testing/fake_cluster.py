"""An in-memory `ClusterAPI` for testing front ends (REST server, client, CLI) without a daemon.

Manifests are checked by the real parser (`caldera.core.manifest`), so bad input fails
as it would on a daemon; nothing is scheduled or run. A job's pods exist as soon as it
is applied (Pending, no node), and tests move phases by hand (`set_phase`, `set_pod`)
and write logs (`write_log`: one file per pod under `log_dir`). What the front end
asked is recorded (`commands`, `shutdowns`, `submit_dirs`). Safe to call from any thread;
log followers (`stream_log`) wake up on every change instead of polling.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from caldera import __version__
from caldera.backends.process import attempt_spans
from caldera.core import objects as o
from caldera.core.elastic import check_scale, scale_target
from caldera.core.errors import FieldError, ValidationError
from caldera.core.manifest import parse_object
from caldera.core.validation import priority_class_errors
from caldera.system.api import JSON, ClusterAPI, Conflict, NotFound
from caldera.system.timeline import pod_timeline
from caldera.testing import fake_views
from caldera.testing.fake_records import FakeJob, FakePod
from caldera.utils.clock import Clock, ManualClock

DEFAULT_NODE: JSON = {
    "name": "node-0",
    "allocatable": {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "2", "pods": "110"},
    "allocated": {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0", "pods": "0"},
    "gpus": 2,
    "gpusUsed": 0,
    "virtualGpus": True,
    "pods": 0,
}


class FakeCluster:
    """`ClusterAPI` + `stream_log` in memory. A queue `default` (Open) exists from the start."""

    def __init__(self, log_dir: Path, *, clock: Clock | None = None, nodes: list[JSON] | None = None) -> None:
        self.log_dir = log_dir
        self.clock = clock or ManualClock(1_000_000.0)
        self.nodes = [dict(n) for n in (nodes if nodes is not None else [DEFAULT_NODE])]
        self.jobs: dict[tuple[str, str], FakeJob] = {}
        self.queues: dict[str, JSON] = {}
        self.priority_classes: dict[str, JSON] = {}
        self.event_log: list[JSON] = []
        self.commands: list[tuple[str, str, str]] = []
        self.shutdowns: list[bool] = []
        self.scales: list[tuple[str, str, int, str]] = []
        self.submit_dirs: dict[tuple[str, str], str | None] = {}
        self.patches: list[tuple[str, dict[str, str | None], list[JSON] | None]] = []
        self.line_times: dict[tuple[str, str], list[tuple[str, float]]] = {}  # each log line and when it was written
        self._changed = threading.Condition()
        self.apply({"apiVersion": o.SCHEDULING_API, "kind": "Queue", "metadata": {"name": "default"}, "spec": {}})

    # ------------------------------------------------------------ ClusterAPI: writes

    def apply(self, manifest: JSON, submit_dir: str | None = None) -> JSON:
        obj = parse_object(manifest)
        with self._changed:
            if isinstance(obj, o.Job):
                return self._apply_job(manifest, obj, submit_dir)
            if isinstance(obj, o.Queue):
                self.queues[obj.name] = obj.to_dict()
                return self.queues[obj.name]
            self.priority_classes[obj.name] = obj.to_dict()
            return self.priority_classes[obj.name]

    def _apply_job(self, manifest: JSON, job: o.Job, submit_dir: str | None) -> JSON:
        namespace = job.metadata.namespace or "default"
        queue = self.queues.get(job.spec.queue)
        if queue is None:
            raise ValidationError([FieldError("spec.queue", f"queue {job.spec.queue!r} does not exist")])
        if queue["status"]["state"] != o.QUEUE_OPEN:
            rule = f"queue {job.spec.queue!r} is {queue['status']['state']}: it takes no new job"
            raise ValidationError([FieldError("spec.queue", rule)])
        if unknown := priority_class_errors(job, self.priority_classes):
            raise ValidationError(unknown, f"job {job.name}")
        key = (namespace, job.name)
        fake = FakeJob(dict(manifest), namespace, job.name, job.spec.queue, job.spec.min_available, self.clock.now())
        for task in job.spec.tasks:
            for i in range(task.replicas):
                name = f"{job.name}-{task.name}-{i}"
                fake.pods[name] = FakePod(name, task.name, i)
        if key in self.jobs:
            fake.created = self.jobs[key].created
        self.jobs[key] = fake
        self.submit_dirs[key] = submit_dir
        self._notify()
        return fake.object()

    def delete_job(self, namespace: str, name: str) -> None:
        with self._changed:
            self._job(namespace, name)
            del self.jobs[(namespace, name)]
            self._notify()

    def command(self, namespace: str, name: str, action: str) -> None:
        with self._changed:
            job = self._job(namespace, name)
            if action not in ("AbortJob", "ResumeJob"):
                raise ValidationError([FieldError("action", f"{action!r} is not AbortJob or ResumeJob")])
            self.commands.append((namespace, name, action))
            job.phase = o.ABORTED if action == "AbortJob" else o.PENDING
            self._notify()

    def set_queue_state(self, name: str, state: str) -> JSON:
        with self._changed:
            queue = self.get_queue(name)
            if state not in (o.QUEUE_OPEN, o.QUEUE_CLOSED):
                raise ValidationError([FieldError("state", f"{state!r} is not Open or Closed")])
            queue["status"]["state"] = state
            return queue

    def delete_queue(self, name: str) -> None:
        with self._changed:
            self.get_queue(name)
            if name == "default":
                raise Conflict("queue default cannot be deleted")
            users = sorted(f"{j.namespace}/{j.name}" for j in self.jobs.values() if j.queue == name)
            if users:
                raise Conflict(f"queue {name} still has jobs: {', '.join(users)}")
            del self.queues[name]

    def scale_job(self, namespace: str, name: str, replicas: int, task: str | None = None) -> JSON:
        with self._changed:
            fake = self._job(namespace, name)
            job = parse_object(fake.manifest)
            assert isinstance(job, o.Job)
            task = scale_target(job, task)
            errors = check_scale(job, task, replicas)
            if errors:
                raise ValidationError(errors, f"scale {name}")
            self.scales.append((namespace, name, replicas, task))
            for pod in [p for p in fake.pods.values() if p.task == task and p.index >= replicas]:
                del fake.pods[pod.name]
            for index in range(replicas):
                pod_name = f"{name}-{task}-{index}"
                fake.pods.setdefault(pod_name, FakePod(pod_name, task, index))
            self._notify()
            return fake.summary()

    def changes(
        self, kinds: tuple[str, ...], namespace: str | None = None, since: int | None = None, timeout: float = 0.0
    ) -> JSON:
        """Every job as ADDED; the fake keeps no change log, so a batch after a version is empty."""
        with self._changed:
            version = len(self.event_log)
            if since is not None or (kinds and "Job" not in kinds):
                return {"resourceVersion": max(version, since or 0), "events": []}
            jobs = [j for (ns, _), j in sorted(self.jobs.items()) if namespace in (None, ns)]
            return {"resourceVersion": version, "events": [{"type": "ADDED", "object": j.object()} for j in jobs]}

    def shutdown(self, stop_pods: bool = True) -> None:
        self.shutdowns.append(stop_pods)

    # ------------------------------------------------------------ ClusterAPI: reads

    def list_jobs(self, namespace: str | None = None) -> list[JSON]:
        with self._changed:
            return [j.summary() for (ns, _), j in sorted(self.jobs.items()) if namespace in (None, ns)]

    def get_job(self, namespace: str, name: str) -> JSON:
        with self._changed:
            return self._job(namespace, name).summary()

    def describe_job(self, namespace: str, name: str) -> JSON:
        with self._changed:
            job = self._job(namespace, name)
            pg = {"metadata": {"name": name, "namespace": namespace}, "status": {"phase": "Inqueue"}}
            objects = (name, *job.pods)
            events = [e for e in self.event_log if e["namespace"] == namespace and e["object"] in objects]
            return {"job": job.object(), "summary": job.summary(), "podgroup": pg, "events": events}

    def explain_job(self, namespace: str, name: str) -> JSON:
        """What the daemon's explanation has, for a job whose waiting reason a test set (`set_waiting`)."""
        with self._changed:
            job = self._job(namespace, name)
            waiting = job.waiting or {}
            never = [str(waiting["message"])] if waiting.get("never") else []
            now = [str(waiting["message"])] if waiting and not waiting.get("never") else []
            queue = {"name": job.queue, "state": "Open", "capability": {}, "allocated": {}, "minimum": {}}
            return {
                "job": name,
                "namespace": namespace,
                "phase": job.phase,
                "podGroup": "Inqueue",
                "waiting": job.waiting,
                "conditions": [],
                "never": never,
                "now": now,
                "queue": {**queue, "never": "", "now": ""},
                "nodeClasses": [],
            }

    def list_queues(self) -> list[JSON]:
        with self._changed:
            return [self.queues[n] for n in sorted(self.queues)]

    def get_queue(self, name: str) -> JSON:
        queue = self.queues.get(name)
        if queue is None:
            raise NotFound(f"queue {name} not found")
        return queue

    def list_nodes(self) -> list[JSON]:
        return [dict(n) for n in self.nodes]

    def patch_node(
        self, name: str, labels: Mapping[str, str | None] | None = None, taints: list[JSON] | None = None
    ) -> JSON:
        with self._changed:
            node = next((n for n in self.nodes if n["name"] == name), None)
            if node is None:
                raise NotFound(f"node {name} not found")
            merged = {**(node.get("labels") or {}), **(labels or {})}
            node["labels"] = {k: v for k, v in merged.items() if v is not None}
            if taints is not None:
                node["taints"] = list(taints)
            self.patches.append((name, dict(labels or {}), taints))
            return dict(node)

    def list_priority_classes(self) -> list[JSON]:
        with self._changed:
            return [self.priority_classes[n] for n in sorted(self.priority_classes)]

    def events(self, namespace: str | None = None, objects: tuple[str, ...] = (), since: int = 0) -> list[JSON]:
        with self._changed:
            return [
                e
                for e in self.event_log
                if e["id"] > since and namespace in (None, e["namespace"]) and (not objects or e["object"] in objects)
            ]

    def pod_log(self, namespace: str, pod: str) -> str:
        with self._changed:
            self._pod(namespace, pod)
            return str(self._log_path(namespace, pod))

    def info(self) -> JSON:
        version = len(self.event_log)
        return {
            "version": __version__,
            "home": str(self.log_dir),
            "nodes": len(self.nodes),
            "listening": "",
            "resourceVersion": version,
        }

    # ------------------------------------------------------------ ClusterAPI: views (no scheduler: no shares)

    def overview(self) -> JSON:
        with self._changed:
            return fake_views.overview(self.nodes, self.jobs, self.queues, self.event_log, self.clock.now())

    def allocations(self, node: str | None = None, pods_up_to: int | None = None) -> JSON:
        with self._changed:
            items = fake_views.allocations(self.nodes, self.jobs, node, pods_up_to)
            return {"resourceVersion": len(self.event_log), "time": self.clock.now(), "items": items}

    def job_table(self) -> JSON:
        with self._changed:
            items = fake_views.job_table(self.jobs)
            return {"resourceVersion": len(self.event_log), "time": self.clock.now(), "items": items}

    def timeline(
        self,
        namespace: str | None = None,
        job: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> JSON:
        """From the recorded events (`add_event`), as the daemon builds it from its store."""
        with self._changed:
            found = pod_timeline(list(self.event_log), namespace=namespace, job=job, since=since, until=until)
            return {"resourceVersion": len(self.event_log), "time": self.clock.now(), **found}

    # ------------------------------------------------------------ what the client adds

    def stream_log(
        self,
        namespace: str,
        pod: str,
        follow: bool = False,
        tail: int | None = None,
        since_seconds: int | None = None,
        timestamps: bool = False,
        since_time: float | None = None,
        previous: bool = False,
    ) -> Iterator[str]:
        """The log as one chunk; with `follow`, then every append until the pod has finished.

        `since_seconds`, `since_time` and `timestamps` read the times `write_log` noted on the fake's
        clock; `previous`: the attempt before the last (parts open with the executor's header lines)."""
        path = Path(self.pod_log(namespace, pod))
        text = path.read_text() if path.exists() else ""
        if previous:
            spans = attempt_spans(path)
            if len(spans) < 2:
                raise NotFound(f"pod {namespace}/{pod} has no previous attempt")
            text, follow = path.read_bytes()[spans[-2][0] : spans[-2][1]].decode(errors="replace"), False
        if since_seconds is not None or since_time is not None or timestamps:
            cutoff = self.clock.now() - since_seconds if since_seconds is not None else float("-inf")
            cutoff = max(cutoff, since_time) if since_time is not None else cutoff
            noted = self.line_times.get((namespace, pod), [])
            text = "".join(
                (f"{datetime.fromtimestamp(t, UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')} " if timestamps else "") + line
                for line, t in noted
                if t >= cutoff
            )
        if tail is not None and tail >= 0:
            lines = text.splitlines(keepends=True)
            text = "".join(lines[len(lines) - tail :]) if tail else ""
        offset = path.stat().st_size if path.exists() else 0
        if text:
            yield text
        while follow:
            with self._changed:
                # Seen finished, then drained: nothing written before the end is lost.
                done = self._pod_finished(namespace, pod)
                data = _read_from(path, offset)
                if not data and not done:
                    self._changed.wait(timeout=5.0)
                    continue
            offset += len(data)
            if data:
                yield data.decode(errors="replace")
            elif done:
                return

    # ------------------------------------------------------------ what tests do

    def set_phase(self, namespace: str, name: str, phase: str, *, reason: str = "", message: str = "") -> None:
        with self._changed:
            job = self._job(namespace, name)
            job.phase, job.reason, job.message = phase, reason, message
            if phase == o.RUNNING and job.start is None:
                job.start = self.clock.now()
            if phase in o.FINISHED_JOB_PHASES:
                job.completion = self.clock.now()
            self._notify()

    def set_waiting(self, namespace: str, name: str, reason: str, message: str, *, never: bool = False) -> None:
        """The job's waiting reason, as the daemon would give it ("" reason: nothing holds it up)."""
        with self._changed:
            job = self._job(namespace, name)
            job.waiting = {"reason": reason, "message": message, "never": never} if reason else None
            self._notify()

    def set_pod(self, namespace: str, pod: str, **changes: Any) -> None:
        """Change a pod's fields (phase, node, exit_code, restarts, address)."""
        with self._changed:
            p = self._pod(namespace, pod)
            for key, value in changes.items():
                if not hasattr(p, key):
                    raise AttributeError(f"a pod has no field {key!r}")
                setattr(p, key, value)
            self._notify()

    def write_log(self, namespace: str, pod: str, text: str) -> Path:
        """Append `text` to the pod's log file (created on first write)."""
        with self._changed:
            path = self._log_path(namespace, pod)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a") as f:
                f.write(text)
            self.line_times.setdefault((namespace, pod), []).extend(
                (line, self.clock.now()) for line in text.splitlines(keepends=True)
            )
            self._notify()
            return path

    def add_event(self, namespace: str, obj: str, kind: str, reason: str = "", message: str = "") -> None:
        with self._changed:
            event = {"id": len(self.event_log) + 1, "time": self.clock.now(), "namespace": namespace}
            self.event_log.append(
                {**event, "kind": kind, "object": obj, "node": "", "reason": reason, "message": message}
            )

    # ------------------------------------------------------------ internals

    def _job(self, namespace: str, name: str) -> FakeJob:
        job = self.jobs.get((namespace, name))
        if job is None:
            raise NotFound(f"job {namespace}/{name} not found")
        return job

    def _pod(self, namespace: str, pod: str) -> FakePod:
        for (ns, _), job in self.jobs.items():
            if ns == namespace and pod in job.pods:
                return job.pods[pod]
        raise NotFound(f"pod {namespace}/{pod} not found")

    def _pod_finished(self, namespace: str, pod: str) -> bool:
        try:
            return self._pod(namespace, pod).phase in (o.POD_SUCCEEDED, o.POD_FAILED)
        except NotFound:
            return True

    def _log_path(self, namespace: str, pod: str) -> Path:
        return self.log_dir / namespace / pod / "log"

    def _notify(self) -> None:
        self._changed.notify_all()


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with path.open("rb") as f:
            f.seek(offset)
            return f.read()
    except FileNotFoundError:
        return b""


if TYPE_CHECKING:
    _checked: ClusterAPI = FakeCluster(Path())  # mypy: the fake keeps up with the protocol
