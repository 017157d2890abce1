"""Keyword-only builders for nodes, pods and podgroups, with sane defaults (for tests and users' tests)."""

from __future__ import annotations

from collections.abc import Mapping

from caldera.core import objects as o
from caldera.core.resources import parse_resource_list


def make_node(
    name: str = "node",
    *,
    resources: Mapping[str, object] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: tuple[o.Taint, ...] = (),
    unschedulable: bool = False,
) -> o.Node:
    alloc = parse_resource_list(resources or {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "8", "pods": "110"})
    return o.Node(
        o.ObjectMeta(name=name, namespace="", labels=dict(labels or {})),
        allocatable=alloc,
        taints=taints,
        unschedulable=unschedulable,
    )


def make_podgroup(
    job: str = "job",
    *,
    namespace: str = "default",
    min_member: int = 1,
    queue: str = "default",
    priority_class: str = "",
    phase: str = o.PG_INQUEUE,
    min_resources: Mapping[str, object] | None = None,
    created: float = 0.0,
    annotations: Mapping[str, str] | None = None,
    min_task_member: Mapping[str, int] | None = None,
) -> o.PodGroup:
    return o.PodGroup(
        o.ObjectMeta(
            name=job,
            namespace=namespace,
            uid=job,
            creation_timestamp=created,
            annotations=dict(annotations or {}),
        ),
        job=job,
        min_member=min_member,
        queue=queue,
        priority_class_name=priority_class,
        min_resources=parse_resource_list(min_resources or {}),
        phase=phase,
        min_task_member=dict(min_task_member or {}),
    )


def make_pod(
    job: str = "job",
    task: str = "worker",
    index: int = 0,
    *,
    namespace: str = "default",
    requests: Mapping[str, object] | None = None,
    priority: int = 0,
    node: str = "",
    phase: str = o.POD_PENDING,
    node_selector: Mapping[str, str] | None = None,
    tolerations: tuple[o.Toleration, ...] = (),
    node_affinity: tuple[o.NodeSelectorTerm, ...] = (),
    created: float = 0.0,
) -> o.Pod:
    container = o.Container(name=task, requests=parse_resource_list(requests or {"nvidia.com/gpu": "1"}))
    spec = o.PodSpec(
        containers=(container,),
        node_selector=dict(node_selector or {}),
        tolerations=tolerations,
        node_affinity=node_affinity,
    )
    return o.Pod(
        o.ObjectMeta(name=f"{job}-{task}-{index}", namespace=namespace, creation_timestamp=created),
        spec=spec,
        job=job,
        task=task,
        index=index,
        node_name=node,
        priority=priority,
        status=o.PodStatus(phase=phase),
    )
