"""Pods on Kubernetes: the control plane's executor, writing what it decided to the API server.

The control plane calls `start(pod, node)` when the scheduler bound a pod and `stop(pod)`
when a pod must go; both only note the wish. `flush(plane)`, after the plane settled, writes
what changed, many requests at once:

1. pods to stop: deleted with their grace period (a pod never written is gone at once);
2. pods the plane holds that the API server does not (looked for among the jobs the plane touched,
   `touched`, and those waiting for a retry: a turn costs what changed): created from their task's template
   (`backends.kube.manifests.pod_manifest`), *already bound* when the scheduler placed them
   in the same turn (one request instead of two), else unbound (visible while they wait);
   before the first pod of a job, the `svc` and `ssh` plugins' Service, ConfigMap and Secret;
3. pods created earlier and bound now: a `pods/binding`.

What the API server says back arrives through the pod watch (`pod_event`): a pod that
Succeeded or Failed → `plane.pod_exited`, final whatever its restartPolicy (the kubelet restarts
containers in place without the phase ever showing it); a pod deleted → `plane.pod_stopped` (the plane
knows whether it asked). Only events about the incarnation this process created (its uid)
count, so a late event about a pod of the same name never touches its successor.

Invariants: a pod is bound at most once (created bound, or one binding of a pod created
unbound); a pod's create is never sent while a delete of that name is pending; a failed
create is tried again after `RETRY` seconds, with one FailedCreate event.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from caldera.backends.kube import manifests
from caldera.backends.kube.client import JSON, ApiError, Conflict, KubeClient, KubeError, NotFound, resource_path
from caldera.backends.kube.convert import pod_exit_code
from caldera.backends.kube.sshkeys import new_key_pair
from caldera.controller.frameworks import PluginError, job_ports, render
from caldera.core import objects as o
from caldera.core.addresses import DnsAddresses
from caldera.core.elastic import launcher_env
from caldera.system.control import ControlPlane

log = logging.getLogger("caldera.kube.pods")
RETRY = 5.0  # seconds before a failed create is tried again


@dataclass(slots=True)
class ApiPod:
    """What the API server holds of a pod this controller wrote (or found at start)."""

    uid: str
    plane_uid: str  # the plane's pod this is (a pod re-created under the same name is another one)
    node: str = ""
    deleting: bool = False  # an earlier incarnation, deleted so that its name can be used again


@dataclass(slots=True)
class Pending:
    """Wishes of the plane not yet written."""

    bind: dict[str, str] = field(default_factory=dict)  # pod key → node
    delete: dict[str, int] = field(default_factory=dict)  # pod key → grace period (seconds)


class KubePods:
    def __init__(
        self,
        kube: KubeClient,
        pool: ThreadPoolExecutor,
        scheduler_name: str,
        job_object: Callable[[str], JSON | None],
        notify: Callable[[o.Job, str, str], None],
        now: Callable[[], float],
    ) -> None:
        self.kube = kube
        self.pool = pool
        self.scheduler_name = scheduler_name
        self.job_object = job_object  # job key → the Job as the API server has it (its templates)
        self.notify = notify  # (job, reason, message): a Warning event on the job
        self.now = now
        self.elastic_server = ""
        self.api: dict[str, ApiPod] = {}  # pod key → the incarnation in the API server
        self.pending = Pending()
        self.binds = 0  # bindings written (created bound or pods/binding): each pod once
        self.gone_nodes: set[str] = set()  # Nodes deleted from the API server
        self._failed: dict[str, float] = {}  # pod key → when its create failed
        self._plugin_objects: set[str] = set()  # job uids whose Service/ConfigMap/Secret exist
        self._rescaled: set[str] = set()  # job keys whose plugins' files must be written again
        # Job keys whose pods may need a create: those the plane touched (`touched`), those with a pod whose
        # create failed or could not be rendered yet, and those whose pod's earlier incarnation went.
        self._dirty: set[str] = set()

    # ------------------------------------------------------------ the executor

    def start(self, pod: o.Pod, node: o.Node) -> None:
        self.pending.bind[pod.key] = node.name

    def stop(self, pod: o.Pod) -> None:
        grace = pod.spec.termination_grace_period_seconds
        if pod.node_name in self.gone_nodes:
            grace = 0  # no kubelet is left to end it: removed at once, as the pod garbage collector does
        self.pending.delete[pod.key] = 30 if grace is None else int(grace)

    def touched(self, job_keys: set[str]) -> None:
        """These jobs (or their pods) changed in the plane (`take_touched`): their pods are looked at next flush."""
        self._dirty |= job_keys

    # ------------------------------------------------------------ what the API server says

    def adopt(self, pod: JSON) -> None:
        """A pod found in the API server at start (the plane restores it)."""
        meta, spec = pod["metadata"], pod.get("spec") or {}
        uid = str(meta.get("uid", ""))
        self.api[f"{meta['namespace']}/{meta['name']}"] = ApiPod(uid, uid, spec.get("nodeName") or "")

    def pod_event(self, plane: ControlPlane, kind: str, pod: JSON) -> None:
        meta = pod["metadata"]
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        known = self.api.get(key)
        if known is None or known.uid != meta.get("uid"):
            return  # not this incarnation
        current = plane.pods.get(key)
        same = current is not None and current.metadata.uid == known.plane_uid
        if kind == "DELETED":
            del self.api[key]
            if current is not None:
                self._dirty.add(current.job_key)  # a successor waiting for the name can be created now
            if same:
                plane.pod_stopped(key, pod_exit_code(pod) if _ended(pod) else None)
            return
        known.node = (pod.get("spec") or {}).get("nodeName") or known.node
        if same and _ended(pod) and current is not None and not current.finished:
            plane.pod_exited(key, pod_exit_code(pod), final=True)  # the kubelet restarts in place unseen

    # ------------------------------------------------------------ writing

    def flush(self, plane: ControlPlane, gates: Mapping[str, Future[JSON]] | None = None) -> bool:
        """Write the plane's wishes; True if the plane was told something (settle it again).

        A scaled job's plugins' files (the svc ConfigMap's host lists) are written again first, before the pods
        of a scale-up are created.

        `gates`: job key → the creation of its PodGroup, under way: that job's pods are created once it
        succeeded (as soon as it did, while other groups are still being created), never if it failed."""
        told = False
        if self._rescaled:
            self._rewrite_files(plane)
        deletes = [(k, g) for k, g in self.pending.delete.items()]
        self.pending.delete.clear()
        gone_now: list[str] = []
        to_delete: list[tuple[str, int]] = []
        for key, grace in deletes:
            self.pending.bind.pop(key, None)
            if self._written(plane, key):
                to_delete.append((key, grace))
            else:
                gone_now.append(key)  # never written: nothing to wait for
        for key in gone_now:
            plane.pod_stopped(key)
            told = True
        now = self.now()
        creates: list[tuple[o.Pod, JSON]] = []
        dirty, self._dirty = self._dirty, set()
        for job_key in dirty:
            for pod in list(plane.job_pods.get(job_key, {}).values()):
                key = pod.key
                if pod.deletion_timestamp is not None:
                    continue
                old = self.api.get(key)
                if old is not None:
                    if old.plane_uid != pod.metadata.uid and not old.deleting:
                        # A finished pod the plane let go of (a restarted job): its name is wanted again.
                        old.deleting = True
                        to_delete.append((key, 0))
                    continue
                if now - self._failed.get(key, -RETRY) < RETRY:
                    self._dirty.add(job_key)  # tried again once RETRY passed
                    continue
                manifest = self._manifest(plane, pod)
                if manifest is not None:
                    creates.append((pod, manifest))
                elif job_key in plane.jobs:
                    self._dirty.add(job_key)  # its Job or plugins' objects not there yet: tried again
        for (gone, _), error in zip(to_delete, self._parallel(self._delete, to_delete), strict=True):
            if isinstance(error, NotFound):  # gone already: the watch's DELETED may never come for this uid
                same = self._written(plane, gone)
                self.api.pop(gone, None)
                if (current := plane.pods.get(gone)) is not None:
                    self._dirty.add(current.job_key)
                if same:
                    plane.pod_stopped(gone)
                    told = True
        for (pod, _), result in zip(creates, self._create_all(creates, gates or {}), strict=True):
            self._created(plane, pod, result)
        binds = [(k, n) for k, n in self.pending.bind.items() if self._written(plane, k) and not self.api[k].node]
        self.pending.bind.clear()
        for (key, node), result in zip(binds, self._parallel(self._bind, binds), strict=True):
            if result is None:
                self.api[key].node = node
                self.binds += 1
            else:
                log.warning("binding %s to %s failed: %s", key, node, result)
                self.pending.bind[key] = node
        return told

    def _created(self, plane: ControlPlane, pod: o.Pod, result: JSON | Exception) -> None:
        if isinstance(result, Exception):
            self._failed[pod.key] = self.now()
            self._dirty.add(pod.job_key)
            job = plane.jobs.get(pod.job_key)
            if job is not None:
                self.notify(job, "FailedCreate", f"creating pod {pod.name}: {result}")
            return
        self._failed.pop(pod.key, None)
        node = (result.get("spec") or {}).get("nodeName") or ""
        self.api[pod.key] = ApiPod(str(result["metadata"]["uid"]), pod.metadata.uid, node)
        if node:
            self.binds += 1
            self.pending.bind.pop(pod.key, None)

    def _written(self, plane: ControlPlane, key: str) -> bool:
        """Whether the plane's pod `key` (this incarnation) was written to the API server."""
        known, pod = self.api.get(key), plane.pods.get(key)
        return known is not None and pod is not None and known.plane_uid == pod.metadata.uid

    def _manifest(self, plane: ControlPlane, pod: o.Pod) -> JSON | None:
        job = plane.jobs.get(pod.job_key)
        obj = self.job_object(pod.job_key)
        task = job.spec.task(pod.task) if job is not None else None
        if job is None or obj is None or task is None:
            return None
        template = _task_template(obj, pod.task)
        try:
            patch = render(job, task, pod.index, DnsAddresses(job.name), pod_dir="/")
        except PluginError as e:
            self.notify(job, "FailedCreate", str(e))
            self._failed[pod.key] = self.now()
            return None
        env = dict(patch.env)
        env.update(launcher_env(job, pod.task, pod.name, self.elastic_server))
        plugins = job.spec.plugins
        if not self._plugins_written(job, patch.files):
            return None
        return manifests.pod_manifest(
            template,
            pod,
            job_uid=job.metadata.uid,
            scheduler_name=self.scheduler_name,
            node=pod.node_name,
            env=env,
            files=patch.files,
            subdomain=job.name if "svc" in plugins else "",
            ssh="ssh" in plugins,
        )

    def _plugins_written(self, job: o.Job, files: Mapping[str, str]) -> bool:
        """The job's Service, ConfigMap and Secret exist (written now if not); False if that failed."""
        uid = job.metadata.uid
        if uid in self._plugin_objects:
            return True
        ns, plugins = job.namespace, job.spec.plugins
        objects: list[tuple[str, JSON]] = []
        if "svc" in plugins:
            ports = sorted({port for _, port in job_ports(job)})
            objects.append(("services", manifests.headless_service(job.name, ns, uid, ports)))
        if files or "svc" in plugins:
            objects.append(("configmaps", self._files_config_map(job)))
        if "ssh" in plugins:
            private, public = new_key_pair(f"{job.name}@caldera")
            objects.append(("secrets", manifests.ssh_secret(job.name, ns, uid, private, public)))
        try:
            for resource, body in objects:
                _create_or_replace(self.kube, resource_path("v1", resource, namespace=ns), body)
        except (KubeError, PluginError) as e:
            self.notify(job, "FailedCreate", f"the {', '.join(plugins)} plugins' objects: {e}")
            return False
        self._plugin_objects.add(uid)
        return True

    def _files_config_map(self, job: o.Job) -> JSON:
        """The plugins' files of every task (the svc host lists, the MPI hostfile) as the ConfigMap `<job>-svc`."""
        files: dict[str, str] = {}
        for task in job.spec.tasks:  # the files are the same for every pod of a task
            files.update(render(job, task, 0, DnsAddresses(job.name), pod_dir="/").files)
        return manifests.files_config_map(job.name, job.namespace, job.metadata.uid, files)

    def job_scaled(self, job_key: str) -> None:
        """A job's tasks were scaled: its plugins' files (host lists) are written again at the next flush."""
        self._rescaled.add(job_key)

    def _rewrite_files(self, plane: ControlPlane) -> None:
        rescaled, self._rescaled = self._rescaled, set()
        for key in rescaled:
            job = plane.jobs.get(key)
            if job is None or job.metadata.uid not in self._plugin_objects:
                continue  # gone, or its objects not written yet (they will be, from the new spec)
            try:
                body = self._files_config_map(job)
                if not body.get("data") and "svc" not in job.spec.plugins:
                    continue
                _create_or_replace(self.kube, resource_path("v1", "configmaps", namespace=job.namespace), body)
            except (KubeError, PluginError) as e:
                self.notify(job, "FailedCreate", f"rewriting the plugins' files after scaling: {e}")

    def forget_job(self, uid: str) -> None:
        self._plugin_objects.discard(uid)

    # ------------------------------------------------------------ requests

    def _create(self, item: tuple[o.Pod, JSON]) -> JSON:
        pod, manifest = item
        return self.kube.create(resource_path("v1", "pods", namespace=pod.namespace), manifest)

    def _bind(self, item: tuple[str, str]) -> None:
        key, node = item
        ns, name = key.split("/", 1)
        self.kube.create(
            resource_path("v1", "pods", namespace=ns, name=name, subresource="binding"),
            manifests.binding(name, ns, node),
        )

    def _delete(self, item: tuple[str, int]) -> None:
        key, grace = item
        ns, name = key.split("/", 1)
        uid = self.api[key].uid
        self.kube.delete(
            resource_path("v1", "pods", namespace=ns, name=name),
            grace_period_seconds=grace,
            preconditions={"uid": uid} if uid else None,
        )

    def _create_all(self, creates: list[tuple[o.Pod, JSON]], gates: Mapping[str, Future[JSON]]) -> list[Any]:
        """Create the pods, each once its job's PodGroup exists: each created pod, or the KubeError."""

        def call(item: tuple[o.Pod, JSON]) -> Any:
            try:
                return self._create(item)
            except KubeError as e:
                return e

        futures: list[Future[Any]] = []
        for item in creates:
            gate = gates.get(item[0].job_key)
            if gate is None:
                futures.append(self.pool.submit(call, item))
                continue
            chained: Future[Any] = Future()
            gate.add_done_callback(functools.partial(self._after_group, chained, call, item))
            futures.append(chained)
        return [f.result() for f in futures]

    def _after_group(
        self, chained: Future[Any], call: Callable[[Any], Any], item: tuple[o.Pod, JSON], gate: Future[JSON]
    ) -> None:
        """Runs when the PodGroup's creation ended: the pod's creation is sent (or fails with the group's)."""
        error = gate.exception()
        if error is not None:
            chained.set_result(error if isinstance(error, KubeError) else KubeError(f"its PodGroup: {error}"))
            return
        inner = self.pool.submit(call, item)
        inner.add_done_callback(lambda f: chained.set_result(f.result()))

    def _parallel(self, fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        """fn over items on the pool: each result, or the KubeError it raised."""
        if not items:
            return []

        def call(item: Any) -> Any:
            try:
                return fn(item)
            except KubeError as e:
                return e

        if len(items) == 1:
            return [call(items[0])]
        return list(self.pool.map(call, items))


def _ended(pod: JSON) -> bool:
    return (pod.get("status") or {}).get("phase") in (o.POD_SUCCEEDED, o.POD_FAILED)


def _task_template(job: JSON, task: str) -> JSON:
    for i, t in enumerate((job.get("spec") or {}).get("tasks") or []):
        if (t.get("name") or f"default{i}") == task:
            return dict(t.get("template") or {})
    return {}


def _create_or_replace(kube: KubeClient, collection: str, body: JSON) -> None:
    try:
        kube.create(collection, body)
    except Conflict:
        current = kube.get(f"{collection}/{body['metadata']['name']}")
        body = {**body, "metadata": {**body["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
        kube.replace(f"{collection}/{body['metadata']['name']}", body)
    except ApiError:
        raise
