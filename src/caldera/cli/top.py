"""`caldera top node` and `caldera top job`: what is allocated where, as Arena's `top`.

`top node`: per node, CPU, memory and GPUs allocated of allocatable (GPUs marked
"(virtual)" on a cluster that declared them), and the cluster's GPU total.
`top job`: per job, its pods, and the GPUs, CPU and memory its pods request (from the
job's spec) and have allocated (the pods placed on a node and not finished).
"""

from __future__ import annotations

from collections.abc import Mapping

import click

from caldera.cli.common import (
    Cluster,
    VerbGroup,
    clock,
    cluster,
    console,
    emit,
    job_duration,
    namespace_option,
    output_option,
    pods_running,
    table,
    text,
)
from caldera.core.quantity import QuantityError
from caldera.core.resources import add, from_units, parse_resource_list, scale, to_units
from caldera.system.api import JSON

GPU = "nvidia.com/gpu"
FINISHED_POD_PHASES = ("Succeeded", "Failed")


@click.group(cls=VerbGroup)
def top() -> None:
    """What is allocated: per node (`top node`) or per job (`top job`)."""


@top.command("node")
@output_option
@click.pass_context
def top_node(ctx: click.Context, output: str) -> None:
    """CPU, memory and GPUs allocated of allocatable, per node."""
    nodes = cluster(ctx).list_nodes()
    if output != "table":
        emit(nodes, output)
        return
    t = table("NAME", "CPU", "MEMORY", "GPU", "PODS")
    gpus = used = 0
    for n in nodes:
        alloc, total = n.get("allocated") or {}, n.get("allocatable") or {}
        virtual = " (virtual)" if n.get("virtualGpus") else ""
        gpus, used = gpus + int(n.get("gpus") or 0), used + int(n.get("gpusUsed") or 0)
        t.add_row(
            str(n.get("name")),
            _share("cpu", alloc, total),
            _share("memory", alloc, total),
            f"{int(n.get('gpusUsed') or 0)}/{int(n.get('gpus') or 0)}{virtual}",
            text(n.get("pods")),
        )
    out = console()
    out.print(t)
    virtual = " (virtual)" if any(n.get("virtualGpus") for n in nodes) else ""
    share = f" ({100 * used / gpus:.1f}%)" if gpus else ""
    out.print(f"\nAllocated/Total GPUs in cluster: {used}/{gpus}{share}{virtual}")


@top.command("job")
@click.argument("job", required=False)
@namespace_option
@click.option("-A", "--all-namespaces", is_flag=True, help="jobs of every namespace")
@output_option
@click.pass_context
def top_job(ctx: click.Context, job: str | None, namespace: str, all_namespaces: bool, output: str) -> None:
    """Per job: pods running, GPUs, CPU and memory requested and allocated, phase, duration."""
    c = cluster(ctx)
    summaries = [c.get_job(namespace, job)] if job else c.list_jobs(None if all_namespaces else namespace)
    now = clock(ctx).now()
    rows = [_usage(c, s) | {"duration": job_duration(s, now)} for s in summaries]
    if output != "table":
        emit(rows, output)
        return
    t = table("NAME", "PHASE", "RUNNING", "GPU(REQ)", "GPU(ALLOC)", "CPU(REQ)", "MEMORY(REQ)", "DURATION")
    for r in rows:
        name = f"{r['namespace']}/{r['name']}" if all_namespaces else r["name"]
        t.add_row(
            name,
            r["phase"],
            r["running"],
            str(r["gpusRequested"]),
            str(r["gpusAllocated"]),
            r["cpuRequested"],
            r["memoryRequested"],
            r["duration"],
        )
    out = console()
    out.print(t)
    requested, allocated = sum(r["gpusRequested"] for r in rows), sum(r["gpusAllocated"] for r in rows)
    out.print(f"\nTotal allocated/requested GPUs of jobs: {allocated}/{requested}")


def _usage(c: Cluster, summary: JSON) -> JSON:
    """What the job's pods request in all, and what those placed and not finished hold."""
    ns, name = str(summary["namespace"]), str(summary["name"])
    spec = (c.describe_job(ns, name).get("job") or {}).get("spec") or {}
    per_pod = {str(t.get("name")): _pod_requests(t) for t in spec.get("tasks") or []}
    requested: dict[str, float] = {}
    allocated: dict[str, float] = {}
    for t in spec.get("tasks") or []:
        requested = add(requested, scale(per_pod[str(t.get("name"))], int(t.get("replicas") or 0)))
    for p in summary.get("pods") or []:
        if p.get("node") and p.get("phase") not in FINISHED_POD_PHASES:
            allocated = add(allocated, per_pod.get(str(p.get("task")), {}))
    return {
        "name": name,
        "namespace": ns,
        "phase": text(summary.get("phase")),
        "running": pods_running(summary),
        "gpusRequested": round(requested.get(GPU, 0.0) / 1000),
        "gpusAllocated": round(allocated.get(GPU, 0.0) / 1000),
        "cpuRequested": _quantity("cpu", requested),
        "memoryRequested": _quantity("memory", requested),
    }


def _pod_requests(task: JSON) -> dict[str, float]:
    """One pod of the task: its containers' requests (a limit stands for a missing request, as in Kubernetes)."""
    total: dict[str, float] = {}
    pod_spec = (task.get("template") or {}).get("spec") or {}
    for container in pod_spec.get("containers") or []:
        resources = container.get("resources") or {}
        wanted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        try:
            total = add(total, parse_resource_list(wanted))
        except QuantityError:
            continue  # admitted manifests have valid quantities; a stray one is not worth failing `top`
    return total


def _quantity(resource: str, amounts: Mapping[str, float]) -> str:
    value = amounts.get(resource, 0.0)
    return from_units(resource, value) if value else "0"


def _share(resource: str, allocated: Mapping[str, object], allocatable: Mapping[str, object]) -> str:
    """`2/8 (25%)` for a resource; the quantities as the API gives them."""
    a, t = allocated.get(resource, "0"), allocatable.get(resource)
    if t is None:
        return "-"
    try:
        pct = f" ({100 * to_units(resource, a) / to_units(resource, t):.0f}%)" if to_units(resource, t) else ""
    except QuantityError:
        pct = ""
    return f"{a}/{t}{pct}"
