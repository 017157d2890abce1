"""`caldera top node` and `caldera top job`: what is allocated where, as Arena's `top`.

`top node`: per node, CPU, memory and GPUs allocated of allocatable (GPUs marked
"(virtual)" on a cluster that declared them), and the cluster's GPU total. CPU reads
in cores to one decimal (`0.7/2`), memory in Gi or Mi to one decimal, whatever
fraction of a millicore a virtual node's share came to; `-o json` has the exact
quantities. `-o wide` adds each node's labels and taints.
`top job`: per job, its pods, and the GPUs, CPU and memory its pods request (from the
job's spec) and have allocated (the pods placed on a node and not finished).
"""

from __future__ import annotations

from collections.abc import Mapping

import click

from caldera.cli.common import (
    Cluster,
    VerbGroup,
    all_namespaces_option,
    clock,
    cluster,
    complete_jobs,
    job_duration,
    namespace_option,
    no_headers_option,
    output_option,
    pods_running,
    select_jobs,
    selector_option,
    table,
    text,
)
from caldera.cli.node import labels_text, taints_text
from caldera.cli.output import as_list, emit, emit_names, job_resource_name, print_table
from caldera.core.quantity import QuantityError
from caldera.core.resources import add, from_units, is_bytes, parse_resource_list, scale, to_units
from caldera.core.selector import Selector
from caldera.system.api import JSON

GPU = "nvidia.com/gpu"
FINISHED_POD_PHASES = ("Succeeded", "Failed")


@click.group(cls=VerbGroup)
def top() -> None:
    """What is allocated: per node (`top node`) or per job (`top job`)."""


@top.command("node")
@output_option
@no_headers_option
@click.pass_context
def top_node(ctx: click.Context, output: str, no_headers: bool) -> None:
    """CPU, memory and GPUs allocated of allocatable, per node."""
    nodes = cluster(ctx).list_nodes()
    if output in ("json", "yaml"):
        emit(as_list(nodes), output)
        return
    if output == "name":
        emit_names(f"node/{n.get('name')}" for n in nodes)
        return
    wide = output == "wide"
    t = table("NAME", "CPU", "MEMORY", "GPU", "PODS", *(("LABELS", "TAINTS") if wide else ()))
    gpus = used = 0
    for n in nodes:
        alloc, total = n.get("allocated") or {}, n.get("allocatable") or {}
        virtual = " (virtual)" if n.get("virtualGpus") else ""
        gpus, used = gpus + int(n.get("gpus") or 0), used + int(n.get("gpusUsed") or 0)
        row = [
            str(n.get("name")),
            _share("cpu", alloc, total),
            _share("memory", alloc, total),
            f"{int(n.get('gpusUsed') or 0)}/{int(n.get('gpus') or 0)}{virtual}",
            text(n.get("pods")),
        ]
        if wide:
            row += [text(labels_text(n)), text(taints_text(n))]
        t.add_row(*row)
    print_table(t, no_headers)
    virtual = " (virtual)" if any(n.get("virtualGpus") for n in nodes) else ""
    share = f" ({100 * used / gpus:.1f}%)" if gpus else ""
    click.echo(f"\nAllocated/Total GPUs in cluster: {used}/{gpus}{share}{virtual}")


@top.command("job")
@click.argument("job", required=False, shell_complete=complete_jobs)
@namespace_option
@all_namespaces_option
@selector_option
@output_option
@no_headers_option
@click.pass_context
def top_job(
    ctx: click.Context,
    job: str | None,
    namespace: str,
    all_namespaces: bool,
    selector: Selector | None,
    output: str,
    no_headers: bool,
) -> None:
    """Per job: pods running, GPUs, CPU and memory requested and allocated, phase, duration."""
    c = cluster(ctx)
    if job:
        summaries = [c.get_job(namespace, job)]
    else:
        summaries = select_jobs(c, None if all_namespaces else namespace, selector)
    if output == "name":
        emit_names(job_resource_name(s) for s in summaries)
        return
    now = clock(ctx).now()
    rows = [_usage(c, s) | {"duration": job_duration(s, now)} for s in summaries]
    if output in ("json", "yaml"):
        emit(rows[0] if job else as_list(rows), output)
        return
    columns = ("NAME", "PHASE", "RUNNING", "GPU(REQ)", "GPU(ALLOC)", "CPU(REQ)", "MEMORY(REQ)", "DURATION")
    t = table(*(("NAMESPACE", *columns) if all_namespaces else columns), *(("QUEUE",) if output == "wide" else ()))
    for r, s in zip(rows, summaries, strict=True):
        row = [
            r["name"],
            r["phase"],
            r["running"],
            str(r["gpusRequested"]),
            str(r["gpusAllocated"]),
            r["cpuRequested"],
            r["memoryRequested"],
            r["duration"],
        ]
        t.add_row(
            *([r["namespace"]] if all_namespaces else []), *row, *([text(s.get("queue"))] if output == "wide" else [])
        )
    print_table(t, no_headers)
    requested, allocated = sum(r["gpusRequested"] for r in rows), sum(r["gpusAllocated"] for r in rows)
    click.echo(f"\nTotal allocated/requested GPUs of jobs: {allocated}/{requested}")


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
    """`0.7/2 (35%)` for a resource: what is allocated of what the node has, for people (see `short`)."""
    a, t = allocated.get(resource, "0"), allocatable.get(resource)
    if t is None:
        return "-"
    try:
        used, have = to_units(resource, a), to_units(resource, t)
    except QuantityError:
        return f"{a}/{t}"
    pct = f" ({100 * used / have:.0f}%)" if have else ""
    return f"{short(resource, used)}/{short(resource, have)}{pct}"


def short(resource: str, value: float) -> str:
    """A scheduler value to read at a glance: cores (`0.7`, `2`), `Gi`/`Mi` (`1.5Gi`), to one decimal.

    What rounds to nothing but is not nothing keeps its small unit (`30m`, `512Ki`)."""
    if value == 0:
        return "0"
    if is_bytes(resource):
        for unit, size in (("Gi", 1024.0**3), ("Mi", 1024.0**2)):
            if round(value / size, 1) >= 1:
                return f"{round(value / size, 1):g}{unit}"
        return from_units(resource, value)
    if resource == "pods":
        return f"{value:g}"
    cores = round(value / 1000, 1)
    return f"{cores:g}" if cores else f"{round(value):g}m"
