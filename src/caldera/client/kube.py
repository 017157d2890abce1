"""The CLI's cluster when it talks to Kubernetes (`caldera --kubeconfig PATH`): `ClusterAPI` over the API server.

`KubeCluster` answers every method the verbs use with the same shapes and errors as the daemon
(`caldera.system.api`), so a verb cannot tell the two apart:

- writes go to Volcano's API as `kubectl` and `vcctl` would send them: a Job or Kubeflow training
  job is created as the Volcano Job it runs as (checked first with caldera's own rules and the
  cluster's queues and PriorityClasses, so a refusal reads as on the embedded cluster; the API
  server checks the CRDs' rules again); Queues and PriorityClasses are applied server-side;
  `suspend` / `resume` create a `bus.volcano.sh/v1alpha1` Command (AbortJob / ResumeJob), and
  `queue open|close` one for the queue (OpenQueue / CloseQueue), exactly as vcctl does, for the
  controller to act on; `scale` patches the task's replicas (guarded by the resourceVersion read);
  `delete` deletes the Job, its pods following through their ownerReferences;
- reads build the daemon's summaries (`caldera.client.kubeviews`) from Jobs, pods, PodGroups,
  Nodes and core Events; `watch` is a Kubernetes list-then-watch of Jobs or Pods with the
  daemon's initial-events bookmark;
- logs are read from the kubelet through the API server; a pod on a KWOK node has none, which is
  said in so many words.

What only the daemon has (its change log, the scheduler's explanation, the dashboard's views) is a
CalderaError naming what to use instead. Every Kubernetes error becomes the daemon's: NotFound,
Conflict, ValidationError (with the API server's field paths), or a CalderaError with its message.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping

from caldera import __version__
from caldera.backends.kube.client import KubeClient, resource_path
from caldera.backends.kube.crds import BUS_API
from caldera.backends.kube.kubeconfig import load_kubeconfig
from caldera.client.kubeerrors import errors as _errors
from caldera.client.kubelogs import LogOptions, stream_log
from caldera.client.kubeviews import (
    about,
    event_summary,
    job_of,
    job_summary,
    node_summaries,
    plain,
    podgroup_job,
    queue_shown,
    shown,
)
from caldera.core import objects as o
from caldera.core.elastic import check_scale, scale_target, with_elastic_defaults
from caldera.core.errors import CalderaError, FieldError, ValidationError
from caldera.core.kubeflow import as_volcano
from caldera.core.manifest import PRIORITY_CLASS_API, parse_job, parse_object, parse_queue
from caldera.core.validation import USER_ACTIONS, validate_job_admission
from caldera.system.api import JSON, Conflict

FIELD_MANAGER = "caldera-cli"
WATCHABLE = {"Job": (o.JOB_API, "jobs"), "Pod": ("v1", "pods")}


class KubeCluster:
    """`ClusterAPI` (and the CLI's log and watch streams) over one Kubernetes API server."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube

    def close(self) -> None:
        self.kube.close()

    # ------------------------------------------------------------ writes

    def apply(self, manifest: JSON, submit_dir: str | None = None) -> JSON:
        """Create a Job (a Kubeflow job as its Volcano Job), or apply a Queue or PriorityClass; the stored object."""
        manifest = as_volcano(manifest)
        obj = parse_object(manifest, "request")
        if isinstance(obj, o.Job):
            return self._create_job(obj, manifest)
        if isinstance(obj, o.Queue):
            path = resource_path(o.SCHEDULING_API, "queues", name=obj.name)
        elif isinstance(obj, o.PriorityClass):
            path = resource_path(PRIORITY_CLASS_API, "priorityclasses", name=obj.name)
        body = {k: v for k, v in manifest.items() if k != "status"}
        with _errors(f"{manifest.get('kind')} {obj.name}"):
            return plain(self.kube.apply(path, body, field_manager=FIELD_MANAGER, force=True))

    def _create_job(self, job: o.Job, manifest: JSON) -> JSON:
        source = f"job {job.name}"
        errors = _images(job)
        errors += validate_job_admission(job, self._queues(), [str(p["metadata"]["name"]) for p in self._classes()])
        if errors:
            raise ValidationError(errors, source)
        # Admission's one default that is the job's own record: an elastic task's largest size (its annotation).
        with_elastic_defaults(job)
        meta = dict(manifest.get("metadata") or {})
        meta["namespace"] = job.namespace
        if job.metadata.annotations:
            meta["annotations"] = {**(meta.get("annotations") or {}), **job.metadata.annotations}
        body = {**manifest, "metadata": meta}
        try:
            with _errors(source):
                return plain(self.kube.create(resource_path(o.JOB_API, "jobs", namespace=job.namespace), body))
        except Conflict:
            raise Conflict(f"job {job.key} already exists (delete it first)") from None

    def delete_job(self, namespace: str, name: str) -> None:
        with _errors(f"job {namespace}/{name}"):
            self.kube.delete(self._job_path(namespace, name), propagation_policy="Background")

    def command(self, namespace: str, name: str, action: str) -> None:
        """A Volcano bus Command on the job, as `vcctl job suspend|resume` creates it."""
        if action not in USER_ACTIONS:
            raise ValidationError([FieldError("action", f"must be one of {', '.join(USER_ACTIONS)}")], "command")
        job = self._get_job(namespace, name)
        self._command(namespace, job, action)

    def set_queue_state(self, name: str, state: str) -> JSON:
        """Open or close a queue with a Command (OpenQueue / CloseQueue), as `vcctl queue operate`; the queue."""
        if state not in (o.QUEUE_OPEN, o.QUEUE_CLOSED):
            raise ValidationError([FieldError("state", "must be Open or Closed")], "queue")
        queue = self.get_queue(name)
        self._command("default", queue, "OpenQueue" if state == o.QUEUE_OPEN else "CloseQueue")
        return queue

    def delete_queue(self, name: str) -> None:
        if name == "default":
            raise Conflict("the default queue cannot be deleted")
        self.get_queue(name)
        users = sorted(
            f"{j['metadata'].get('namespace')}/{j['metadata']['name']}"
            for j in self._list(resource_path(o.JOB_API, "jobs"))
            if ((j.get("spec") or {}).get("queue") or "default") == name
        )
        if users:
            raise Conflict(f"queue {name} still has jobs: {', '.join(users)}")
        with _errors(f"queue {name}"):
            self.kube.delete(resource_path(o.SCHEDULING_API, "queues", name=name))

    def scale_job(self, namespace: str, name: str, replicas: int, task: str | None = None) -> JSON:
        """Set a task's replicas (an elastic task, within its range), guarded by the version read."""
        raw = self._get_job(namespace, name)
        job = parse_job(raw, f"job {namespace}/{name}")
        with_elastic_defaults(job)
        target = scale_target(job, task)
        errors = check_scale(job, target, replicas)
        if errors:
            raise ValidationError(errors, f"scale {name}")
        index = next(i for i, t in enumerate(job.spec.tasks) if t.name == target)
        patch = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": raw["metadata"]["resourceVersion"]},
            {"op": "replace", "path": f"/spec/tasks/{index}/replicas", "value": replicas},
        ]
        with _errors(f"job {namespace}/{name}"):
            self.kube.patch(self._job_path(namespace, name), patch, kind="json", field_manager=FIELD_MANAGER)
        return self.get_job(namespace, name)

    def patch_node(
        self, name: str, labels: Mapping[str, str | None] | None = None, taints: list[JSON] | None = None
    ) -> JSON:
        patch: JSON = {}
        if labels is not None:
            patch["metadata"] = {"labels": dict(labels)}
        if taints is not None:
            patch["spec"] = {"taints": taints}
        with _errors(f"node {name}"):
            self.kube.patch(resource_path("v1", "nodes", name=name), patch, field_manager=FIELD_MANAGER)
        return next(n for n in self.list_nodes() if n["name"] == name)

    def shutdown(self, stop_pods: bool = True) -> None:
        raise CalderaError(
            "`caldera down` stops the embedded daemon; on Kubernetes the controller is a Deployment "
            "(kubectl -n caldera-system scale deployment caldera-controller --replicas 0)"
        )

    # ------------------------------------------------------------ reads

    def list_jobs(self, namespace: str | None = None) -> list[JSON]:
        jobs = self._list(resource_path(o.JOB_API, "jobs", namespace=namespace))
        pods: dict[tuple[str, str], list[JSON]] = {}
        for p in self._list(resource_path("v1", "pods", namespace=namespace), label_selector=o.JOB_NAME_KEY):
            pods.setdefault((p["metadata"].get("namespace"), job_of(p) or ""), []).append(p)
        groups = {
            (g["metadata"].get("namespace"), podgroup_job(g)): g
            for g in self._list(resource_path(o.SCHEDULING_API, "podgroups", namespace=namespace))
        }
        out = []
        for j in sorted(jobs, key=lambda j: (j["metadata"].get("namespace"), j["metadata"]["name"])):
            key = (j["metadata"].get("namespace"), j["metadata"]["name"])
            out.append(job_summary(j, pods.get(key, []), groups.get(key)))
        return out

    def get_job(self, namespace: str, name: str) -> JSON:
        job = self._get_job(namespace, name)
        return job_summary(job, self._job_pods(namespace, name), self._podgroup(namespace, job))

    def describe_job(self, namespace: str, name: str) -> JSON:
        job = self._get_job(namespace, name)
        pods = self._job_pods(namespace, name)
        podgroup = self._podgroup(namespace, job)
        objects = {name, *(str(p["metadata"]["name"]) for p in pods)}
        if podgroup is not None:
            objects.add(str(podgroup["metadata"]["name"]))
        events = [e for e in self._list(resource_path("v1", "events", namespace=namespace)) if about(e, objects)]
        events.sort(key=lambda e: str(event_summary(e)["time"] or ""))
        return {
            "job": plain(job),
            "summary": job_summary(job, pods, podgroup),
            "podgroup": None if podgroup is None else plain(podgroup),
            "events": [event_summary(e) for e in events],
        }

    def explain_job(self, namespace: str, name: str) -> JSON:
        self._get_job(namespace, name)
        raise CalderaError(
            "`caldera explain` asks the scheduler of the embedded cluster; on Kubernetes, "
            f"`caldera describe {name}` shows the job's PodGroup conditions and FailedScheduling events"
        )

    def list_queues(self) -> list[JSON]:
        queues = self._list(resource_path(o.SCHEDULING_API, "queues"))
        return sorted((queue_shown(q) for q in queues), key=lambda q: str(q["metadata"]["name"]))

    def get_queue(self, name: str) -> JSON:
        with _errors(f"queue {name}"):
            return queue_shown(self.kube.get(resource_path(o.SCHEDULING_API, "queues", name=name)))

    def list_nodes(self) -> list[JSON]:
        nodes = sorted(self._list(resource_path("v1", "nodes")), key=lambda n: str(n["metadata"]["name"]))
        return node_summaries(nodes, self._list(resource_path("v1", "pods"), field_selector="spec.nodeName!="))

    def list_priority_classes(self) -> list[JSON]:
        return sorted((plain(p) for p in self._classes()), key=lambda p: str(p["metadata"]["name"]))

    def events(self, namespace: str | None = None, objects: tuple[str, ...] = (), since: int = 0) -> list[JSON]:
        found = self._list(resource_path("v1", "events", namespace=namespace))
        return [event_summary(e) for e in found if not objects or about(e, set(objects))]

    def changes(
        self, kinds: tuple[str, ...], namespace: str | None = None, since: int | None = None, timeout: float = 0.0
    ) -> JSON:
        raise CalderaError("on Kubernetes, changes are followed with watches (`caldera list -w`, `kubectl get -w`)")

    def watch(
        self,
        kinds: tuple[str, ...] = (),
        namespace: str | None = None,
        since: int | None = None,
        timeout: float | None = None,
    ) -> Iterator[JSON]:
        """Every Job (or Pod) as ADDED, the initial-events BOOKMARK, then each change: one kind at a time."""
        if len(kinds) != 1 or kinds[0] not in WATCHABLE:
            raise CalderaError(f"on Kubernetes one kind is watched at a time: {' or '.join(WATCHABLE)}")
        api, resource = WATCHABLE[kinds[0]]
        path = resource_path(api, resource, namespace=namespace)
        with _errors(f"{resource}"):
            version = str(since) if since is not None else None
            if version is None:
                items, version = self.kube.list_all(path)
                for item in items:
                    yield {"type": "ADDED", "object": shown(item)}
                end = {"resourceVersion": version, "annotations": {"k8s.io/initial-events-end": "true"}}
                yield {"type": "BOOKMARK", "object": {"kind": kinds[0], "metadata": end}}
            seconds = None if timeout is None else max(1, int(timeout))
            for kind, obj in self.kube.watch(path, resource_version=version, timeout_seconds=seconds):
                yield {"type": kind, "object": shown(obj)}

    def pod_log(self, namespace: str, pod: str) -> str:
        raise CalderaError("on Kubernetes a pod's log lives on its node: `caldera logs` streams it")

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
        """The pod's log from its kubelet (through the API server), as `kubectl logs` reads it."""
        options = LogOptions(follow, tail, since_seconds, timestamps, since_time, previous)
        return stream_log(self.kube, namespace, pod, options)

    def info(self) -> JSON:
        """What only a daemon has (its URL, for `dashboard` and `docs`): on Kubernetes, said so."""
        raise CalderaError(
            "on Kubernetes there is no caldera daemon (no dashboard, no REST API): the controller is a Deployment, "
            "see `kubectl -n caldera-system get deployment caldera-controller`"
        )

    # ------------------------------------------------------------ the daemon's views

    def overview(self) -> JSON:
        raise _daemon_only("overview")

    def allocations(self, node: str | None = None, pods_up_to: int | None = None) -> JSON:
        raise _daemon_only("allocations")

    def job_table(self) -> JSON:
        raise _daemon_only("job table")

    def timeline(
        self,
        namespace: str | None = None,
        job: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> JSON:
        raise _daemon_only("timeline")

    # ------------------------------------------------------------ plumbing

    def _job_path(self, namespace: str, name: str) -> str:
        return resource_path(o.JOB_API, "jobs", namespace=namespace, name=name)

    def _get_job(self, namespace: str, name: str) -> JSON:
        with _errors(f"job {namespace}/{name}"):
            return self.kube.get(self._job_path(namespace, name))

    def _job_pods(self, namespace: str, name: str) -> list[JSON]:
        path = resource_path("v1", "pods", namespace=namespace)
        return self._list(path, label_selector=f"{o.JOB_NAME_KEY}={name}")

    def _podgroup(self, namespace: str, job: JSON) -> JSON | None:
        name = job["metadata"]["name"]
        found = [
            g
            for g in self._list(resource_path(o.SCHEDULING_API, "podgroups", namespace=namespace))
            if podgroup_job(g) == name
        ]
        return found[0] if found else None

    def _queues(self) -> dict[str, o.Queue]:
        queues = {}
        for q in self._list(resource_path(o.SCHEDULING_API, "queues")):
            try:
                queue = parse_queue(
                    {k: v for k, v in q.items() if k in ("apiVersion", "kind", "spec", "status")}
                    | {"metadata": {"name": q["metadata"]["name"]}}
                )
            except ValidationError:
                continue  # a queue caldera cannot read takes no job of its
            queues[queue.name] = queue
        return queues

    def _classes(self) -> list[JSON]:
        return self._list(resource_path(PRIORITY_CLASS_API, "priorityclasses"))

    def _list(
        self, path: str, *, label_selector: str | None = None, field_selector: str | None = None
    ) -> builtins.list[JSON]:
        with _errors(path.rsplit("/", 1)[-1]):
            items, _ = self.kube.list_all(path, label_selector=label_selector, field_selector=field_selector)
        return items

    def _command(self, namespace: str, target: JSON, action: str) -> None:
        meta = target["metadata"]
        ref = {
            "apiVersion": target["apiVersion"],
            "kind": target["kind"],
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        command = {
            "apiVersion": BUS_API,
            "kind": "Command",
            "metadata": {
                "generateName": f"{meta['name']}-{action.lower()}-",
                "namespace": namespace,
                "ownerReferences": [ref],
            },
            "target": ref,
            "action": action,
        }
        with _errors(f"command {action} on {target['kind']} {meta['name']}"):
            self.kube.create(resource_path(BUS_API, "commands", namespace=namespace), command)


def _images(job: o.Job) -> list[FieldError]:
    """On Kubernetes every container needs an image (the embedded cluster runs commands without one)."""
    return [
        FieldError(f"spec.tasks[{i}].template.spec.containers[{j}].image", "is required on Kubernetes (submit --image)")
        for i, task in enumerate(job.spec.tasks)
        for j, c in enumerate(task.template.spec.containers)
        if not c.image
    ]


def _daemon_only(what: str) -> CalderaError:
    return CalderaError(f"the {what} is a view of the embedded daemon, not available against a Kubernetes cluster")


def connect_kube(kubeconfig: str) -> KubeCluster:
    """The cluster of the kubeconfig at `kubeconfig` (its current context); a broken file is one clear error."""
    return KubeCluster(KubeClient(load_kubeconfig(kubeconfig), user_agent=f"caldera/{__version__}"))
