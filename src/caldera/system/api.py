"""What the embedded cluster offers its front ends (REST server, tests): the operations and their shapes.

The daemon implements `ClusterAPI`; the REST server exposes it over HTTP and
the typed client mirrors it, so the CLI never knows whether it talks to a
daemon or to an in-process cluster. Every method is safe to call from any
thread. Writes raise `NotFound`, `Conflict` or `ValidationError` (all
CalderaErrors, mapped to 404, 409 and 422 by the server); reads return plain
JSON-ready dicts in the Kubernetes shape, with these stable summaries:

job summary (list/get `-o json`):
  {"name", "namespace", "apiVersion", "kind" (what it was applied as: Job, or a Kubeflow kind),
   "type" (its volcano.sh/job-type label), "labels", "queue", "phase", "retryCount", "minAvailable",
   "creationTimestamp", "startTime", "completionTime", "reason", "message",
   "waiting": null or {"reason": "NeverFits" | "Unschedulable" | "CrashLoopBackOff", "message", "never": bool},
   "pods": [{"name", "task", "index", "node", "phase", "exitCode", "restarts", "address",
             "reason" ("CrashLoopBackOff"; "Stopped" or "Evicted" for a pod that ended and was removed),
             "message"}],
   "tensorboard": "http://127.0.0.1:P" or null (the job's TensorBoard, `submit --tensorboard`)}
explanation (`explain`):
  {"job", "namespace", "phase", "podGroup", "waiting", "conditions", "never": [why it can never run],
   "now": [what stands in its way now], "queue": {"name", "state", "capability", "allocated",
   "minimum", "never", "now"}, "nodeClasses": [{"nodes", "allocatable", "labels", "taints",
   "schedulable", "tasks": [{"task", "need", "perNode", "fitsNow", "blocks"}]}]}
node summary (top node):
  {"name", "labels", "taints": [{"key", "value", "effect"}], "allocatable": {res: qty},
   "allocated": {res: qty}, "gpus": int, "gpusUsed": int, "virtualGpus": bool, "pods": int}
watch batch (`changes`), Kubernetes' watch events:
  {"resourceVersion": int, "events": [{"type": "ADDED" | "MODIFIED" | "DELETED", "object": {...}}]}
  where an object is the stored one (Job, Pod, PodGroup, Queue, PriorityClass; a Node is its
  summary with "kind" and "metadata"), a DELETED one its kind and metadata only.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any, Protocol, runtime_checkable

from caldera.core.errors import CalderaError

JSON = dict[str, Any]


class NotFound(CalderaError):
    """No such job, queue or pod."""


class Conflict(CalderaError):
    """The change is not allowed in the object's current state (e.g. deleting a queue with jobs)."""


class Unavailable(CalderaError):
    """The daemon cannot save its state (disk full, read-only): the change was refused or not saved (HTTP 503)."""


class Expired(CalderaError):
    """A watch from a resourceVersion older than the change log keeps: list again, then watch (HTTP 410)."""


WATCH_KINDS = ("Job", "Pod", "PodGroup", "Queue", "PriorityClass", "Node")


@runtime_checkable
class AppliesLater(Protocol):
    """A cluster that can take an `apply` without a thread waiting for it (the embedded cluster): the REST
    server's event loop awaits the future instead of lending a worker thread to the call."""

    def apply_later(self, manifest: JSON, submit_dir: str | None = None) -> Future[JSON]:
        """`apply`'s checks on the caller's thread (raising as `apply` does), then a future of its result, set
        once the change is durable. A name still held by a deleted job's stopping pods fails with a Conflict
        (`jobextras.StillDeleting`) at once, where `apply` waits for it."""
        ...


class ClusterAPI(Protocol):
    # ------------------------------------------------------------ writes

    def apply(self, manifest: JSON, submit_dir: str | None = None) -> JSON:
        """Create (or update, within Volcano's update rules) a Job or Queue from its manifest.

        `submit_dir` is the directory the user submitted from: relative workingDir and
        commands resolve against it. Returns the stored object."""
        ...

    def delete_job(self, namespace: str, name: str) -> None:
        """Stop the job's pods and remove it (idempotent for a job already being deleted)."""
        ...

    def command(self, namespace: str, name: str, action: str) -> None:
        """A user's command on a job: AbortJob (suspend) or ResumeJob (resume)."""
        ...

    def set_queue_state(self, name: str, state: str) -> JSON:
        """Open or close a queue (Closed: no new job; existing ones run on)."""
        ...

    def delete_queue(self, name: str) -> None: ...

    def scale_job(self, namespace: str, name: str, replicas: int, task: str | None = None) -> JSON:
        """Set the replicas of one task of a job (`caldera scale`); returns the job summary.

        `task` None means the job's elastic task (else its first). Raises NotFound for no
        such job, ValidationError for a task that cannot be scaled or a replicas value out
        of its range (an elastic task's [minAvailable, max])."""
        ...

    def patch_node(
        self, name: str, labels: Mapping[str, str | None] | None = None, taints: list[JSON] | None = None
    ) -> JSON:
        """Change a node's labels (merged; a None value removes one) and/or taints (replaced); its node summary.

        `caldera node label|taint`, as a JSON merge patch of {"metadata": {"labels"}, "spec": {"taints"}}.
        Raises NotFound for no such node, ValidationError for a label the cluster owns or a bad taint."""
        ...

    def shutdown(self, stop_pods: bool = True) -> None:
        """Stop the daemon; with `stop_pods`, every pod first (`caldera down`)."""
        ...

    # ------------------------------------------------------------ reads

    def list_jobs(self, namespace: str | None = None) -> list[JSON]: ...

    def get_job(self, namespace: str, name: str) -> JSON:
        """The job summary (see the module docstring)."""
        ...

    def describe_job(self, namespace: str, name: str) -> JSON:
        """{"job": the full object (spec and status), "summary": job summary, "podgroup": ..., "events": [...],
        "resourceVersion" (where given: the store's version read before the answer, to watch from)}"""
        ...

    def explain_job(self, namespace: str, name: str) -> JSON:
        """Why the job waits: per node class and for its queue (see the module docstring)."""
        ...

    def list_queues(self) -> list[JSON]: ...

    def get_queue(self, name: str) -> JSON: ...

    def list_nodes(self) -> list[JSON]: ...

    def list_priority_classes(self) -> list[JSON]:
        """Every PriorityClass (`scheduling.k8s.io/v1` objects), by name."""
        ...

    def events(self, namespace: str | None = None, objects: tuple[str, ...] = (), since: int = 0) -> list[JSON]: ...

    def changes(
        self, kinds: tuple[str, ...], namespace: str | None = None, since: int | None = None, timeout: float = 0.0
    ) -> JSON:
        """A watch batch (see the module docstring) of objects of `kinds` (WATCH_KINDS; empty: all).

        `since` None: every current object as ADDED, and the version they are at; else the
        changes after version `since`, waiting up to `timeout` seconds for one. Continue
        from the batch's "resourceVersion". Raises Expired if `since` is older than the log."""
        ...

    def pod_log(self, namespace: str, pod: str) -> str:
        """Path of the pod's log file (the server streams it; `-f` follows it)."""
        ...

    def info(self) -> JSON:
        """{"version", "home", "nodes", "listening", "resourceVersion"}: what `caldera up` prints, and the
        version the cluster's state is at (watch from it to see every change after this call)."""
        ...

    # ------------------------------------------------------------ views (see `caldera.system.overview`)

    def overview(self) -> JSON:
        """Capacity and allocation, queue shares, jobs and pods by phase, recent events."""
        ...

    def allocations(self, node: str | None = None, pods_up_to: int | None = None) -> JSON:
        """Per node (or only `node`), what is allocated and to which pods (GPU ids, virtual GPUs marked); a node
        with more than `pods_up_to` pods lists only those holding GPUs."""
        ...

    def job_table(self) -> JSON:
        """Every job with only the fields a table of jobs shows (the dashboard's jobs page, `list -w`'s columns)."""
        ...

    def timeline(
        self,
        namespace: str | None = None,
        job: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> JSON:
        """Pods on nodes over time: the runs overlapping [since, until] (`caldera.system.timeline`)."""
        ...
