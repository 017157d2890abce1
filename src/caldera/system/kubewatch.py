"""What the watches of the cluster's own kinds tell the control plane: Nodes, PriorityClasses, Queues, Commands,
and the pods of other schedulers.

- a Node feeds the scheduler (allocatable less what other schedulers' pods hold on it, labels, taints,
  unschedulable, Ready); a change the scheduler does not look at (a heartbeat) does not wake it; a deleted
  Node is lost (its pods are evicted by the plane and deleted at once by `KubePods`);
- a PriorityClass and a Queue go to the plane; a queue's state is the controller's once it saw the queue
  (Commands change it), so a status written before a CloseQueue never opens it again;
- a Command (`bus.volcano.sh`, as vcctl sends it, the target in `target`) is applied, then deleted;
- a pod of another scheduler holds what it requests on its node until it ends or goes.

Invariant: called on the controller's loop thread only; a node's view is recomputed only when what it
holds changed.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from caldera.backends.kube.client import JSON, KubeClient, KubeError, NotFound, resource_path
from caldera.backends.kube.convert import node_from_api, pod_requests, priority_class_from_api, queue_from_api
from caldera.backends.kube.informer import object_key
from caldera.core import objects as o
from caldera.core.resources import add, sub
from caldera.system.control import ControlPlane
from caldera.system.kubepods import KubePods

log = logging.getLogger("caldera.kube")
COMMANDS = ("bus.volcano.sh/v1alpha1", "commands")
QUEUE_ACTIONS = {"OpenQueue": o.QUEUE_OPEN, "CloseQueue": o.QUEUE_CLOSED}  # vcctl queue operate --action


class ClusterWatch:
    def __init__(
        self,
        kube: KubeClient,
        plane: ControlPlane,
        pods: KubePods,
        nodes: dict[str, JSON],
        scheduler_name: str,
    ) -> None:
        self.kube = kube
        self.plane = plane
        self.pods = pods
        self.nodes = nodes  # node name → the Node as the API server has it (the controller's cache)
        self.scheduler_name = scheduler_name
        self._foreign: dict[str, tuple[str, dict[str, float]]] = {}  # pod key → (node, requests) of other schedulers
        self._node_used: dict[str, dict[str, float]] = {}
        self._node_seen: dict[str, tuple[Any, ...]] = {}

    def on_nodes(self, change: str, obj: JSON) -> None:
        name = obj["metadata"]["name"]
        if change == "DELETED":
            self._node_seen.pop(name, None)
            self.pods.gone_nodes.add(name)
            self.plane.node_down(name)
            return
        self.pods.gone_nodes.discard(name)
        node = node_from_api(obj, self._node_used.get(name))
        seen = (node.allocatable, node.labels, node.taints, node.unschedulable, node.ready)
        if self._node_seen.get(name) == seen:
            return  # a heartbeat: nothing the scheduler looks at changed
        self._node_seen[name] = seen
        self.plane.add_node(node)

    def on_priorityclasses(self, change: str, obj: JSON) -> None:
        if change != "DELETED":
            self.plane.add_priority_class(priority_class_from_api(obj))

    def on_queues(self, change: str, obj: JSON) -> None:
        if change == "DELETED":
            self.plane.remove_queue(obj["metadata"]["name"])
            return
        queue = queue_from_api(obj)
        known = self.plane.queues.get(queue.name)
        if known is not None and not (obj.get("spec") or {}).get("state"):
            # Its state is the controller's once it saw the queue (Commands change it): a status it wrote
            # before a CloseQueue must not open the queue again.
            queue = dataclasses.replace(queue, state=known.state)
        self.plane.add_queue(queue)

    def on_commands(self, change: str, obj: JSON) -> None:
        if change == "DELETED":
            return
        target = obj.get("target") or {}  # Volcano: TargetObject *OwnerReference `json:"target"`
        ns = obj["metadata"].get("namespace", "default")
        action = str(obj.get("action", ""))
        if target.get("kind") == "Job" and action:
            self.plane.command(f"{ns}/{target.get('name', '')}", action)
        elif target.get("kind") == "Queue" and action in QUEUE_ACTIONS:
            queue = self.plane.queues.get(str(target.get("name", "")))
            if queue is not None:
                self.plane.add_queue(dataclasses.replace(queue, state=QUEUE_ACTIONS[action]))
        try:
            self.kube.delete(resource_path(*COMMANDS, namespace=ns, name=obj["metadata"]["name"]))
        except NotFound:
            pass
        except KubeError as e:
            log.warning("deleting command %s failed: %s", object_key(obj), e)

    def foreign_pod(self, change: str, obj: JSON) -> None:
        """Pods of other schedulers hold what they request on their node."""
        if (obj.get("spec") or {}).get("schedulerName") != self.scheduler_name:
            self.hold(change, obj)

    def hold(self, change: str, obj: JSON) -> None:
        """The pod holds what it requests on its node while it is bound, not ended and not DELETED: a pod of
        another scheduler, or one of caldera's that the plane does not hold (bound, its PodGroup gone)."""
        spec = obj.get("spec") or {}
        key = object_key(obj)
        node = spec.get("nodeName") or ""
        phase = (obj.get("status") or {}).get("phase")
        holds = change != "DELETED" and node and phase not in (o.POD_SUCCEEDED, o.POD_FAILED)
        old = self._foreign.pop(key, None)
        new = (node, pod_requests(obj)) if holds else None
        if new is not None:
            self._foreign[key] = new
        if old == new:
            return
        touched: set[str] = set()
        if old is not None:
            self._node_used[old[0]] = sub(self._node_used.get(old[0], {}), old[1])
            touched.add(old[0])
        if new is not None:
            self._node_used[new[0]] = add(self._node_used.get(new[0], {}), new[1])
            touched.add(new[0])
        for name in touched:
            if name in self.nodes and name in self._node_seen:  # the plane has it (before the rebuild, not yet)
                self.on_nodes("MODIFIED", self.nodes[name])
