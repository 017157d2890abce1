"""`caldera queue create|list|get|update|open|close|delete`: Volcano queues (as `vcctl queue`).

`create` refuses a queue that exists; `update` changes only the fields given and keeps
the rest (state included); `open`/`close` set the state (a Closed queue takes no new
job, its jobs run on); `delete` refuses a queue that still has jobs.
"""

from __future__ import annotations

import click

from caldera.cli.common import (
    QUEUE_RESOURCE,
    VerbGroup,
    cluster,
    complete_queues,
    no_headers_option,
    output_option,
    table,
    text,
)
from caldera.cli.output import as_list, emit, emit_names, print_table
from caldera.core.objects import SCHEDULING_API
from caldera.system.api import JSON, Conflict, NotFound


def _resources(_: click.Context, __: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        key, sep, qty = v.partition("=")
        if not sep or not key or not qty:
            raise click.BadParameter(f"{v!r} is not RES=QTY (e.g. cpu=8, memory=32Gi, nvidia.com/gpu=4)")
        out[key] = qty
    return out


def _spec_options(f: click.decorators.FC) -> click.decorators.FC:
    f = click.option("--reclaimable/--no-reclaimable", default=None, help="may other queues reclaim what it lends")(f)
    f = click.option(
        "--capability", multiple=True, metavar="RES=QTY", callback=_resources, help="hard cap (repeatable)"
    )(f)
    return click.option("--weight", type=click.IntRange(min=1), help="share of the cluster, relative to others")(f)


@click.group(cls=VerbGroup)
def queue() -> None:
    """Create, inspect, open, close and delete queues."""


@queue.command("create")
@click.argument("name")
@_spec_options
@click.pass_context
def create(
    ctx: click.Context, name: str, weight: int | None, capability: dict[str, str], reclaimable: bool | None
) -> None:
    """Create queue NAME (Open)."""
    c = cluster(ctx)
    try:
        c.get_queue(name)
    except NotFound:
        pass
    else:
        raise Conflict(f"queue {name} already exists (change it with `caldera queue update`)")
    spec: JSON = {"weight": weight or 1}
    if capability:
        spec["capability"] = capability
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    c.apply({"apiVersion": SCHEDULING_API, "kind": "Queue", "metadata": {"name": name}, "spec": spec})
    click.echo(f"{QUEUE_RESOURCE}/{name} created")


@queue.command("update")
@click.argument("name", shell_complete=complete_queues)
@_spec_options
@click.pass_context
def update(
    ctx: click.Context, name: str, weight: int | None, capability: dict[str, str], reclaimable: bool | None
) -> None:
    """Change the weight, capability or reclaimability of queue NAME."""
    c = cluster(ctx)
    current = c.get_queue(name)
    spec: JSON = dict(current.get("spec") or {})
    if weight is not None:
        spec["weight"] = weight
    if capability:
        spec["capability"] = {**(spec.get("capability") or {}), **capability}
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    state = (current.get("status") or {}).get("state")
    if state and "state" not in spec:
        spec["state"] = state  # an update is not a reopening
    c.apply({"apiVersion": SCHEDULING_API, "kind": "Queue", "metadata": {"name": name}, "spec": spec})
    click.echo(f"{QUEUE_RESOURCE}/{name} configured")


@queue.command("list")
@output_option
@no_headers_option
@click.pass_context
def list_queues(ctx: click.Context, output: str, no_headers: bool) -> None:
    """List queues: state, weight, reclaimable, capability (-o wide: guarantee, deserved, parent)."""
    queues = cluster(ctx).list_queues()
    if output in ("json", "yaml"):
        emit(as_list(queues), output)
        return
    if output == "name":
        emit_names(f"{QUEUE_RESOURCE}/{q['metadata']['name']}" for q in queues)
        return
    wide = output == "wide"
    t = table(
        "NAME", "STATE", "WEIGHT", "RECLAIMABLE", "CAPABILITY", *(("GUARANTEE", "DESERVED", "PARENT") if wide else ())
    )
    for q in queues:
        spec = q.get("spec") or {}
        row = [
            str(q["metadata"]["name"]),
            text((q.get("status") or {}).get("state")),
            text(spec.get("weight")),
            text(spec.get("reclaimable")),
            text(_resource_list(spec.get("capability"))),
        ]
        if wide:
            guarantee = (spec.get("guarantee") or {}).get("resource")
            row += [
                text(_resource_list(guarantee)),
                text(_resource_list(spec.get("deserved"))),
                text(spec.get("parent")),
            ]
        t.add_row(*row)
    print_table(t, no_headers)


@queue.command("get")
@click.argument("name", shell_complete=complete_queues)
@click.option("-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
@click.pass_context
def get_queue(ctx: click.Context, name: str, output: str) -> None:
    """Show queue NAME (spec and status)."""
    emit(cluster(ctx).get_queue(name), output)


@queue.command("open")
@click.argument("name", shell_complete=complete_queues)
@click.pass_context
def open_queue(ctx: click.Context, name: str) -> None:
    """Open queue NAME: it takes new jobs again."""
    cluster(ctx).set_queue_state(name, "Open")
    click.echo(f"{QUEUE_RESOURCE}/{name} opened")


@queue.command("close")
@click.argument("name", shell_complete=complete_queues)
@click.pass_context
def close_queue(ctx: click.Context, name: str) -> None:
    """Close queue NAME: no new job; the jobs in it run on."""
    cluster(ctx).set_queue_state(name, "Closed")
    click.echo(f"{QUEUE_RESOURCE}/{name} closed")


@queue.command("delete")
@click.argument("name", shell_complete=complete_queues)
@click.pass_context
def delete_queue(ctx: click.Context, name: str) -> None:
    """Delete queue NAME (it must have no jobs)."""
    cluster(ctx).delete_queue(name)
    click.echo(f"{QUEUE_RESOURCE}/{name} deleted")


def _resource_list(res: object) -> str:
    return ", ".join(f"{k}={v}" for k, v in res.items()) if isinstance(res, dict) and res else ""
