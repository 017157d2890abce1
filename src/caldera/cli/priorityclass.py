"""`caldera priorityclass list|create`: the cluster's PriorityClasses, which `--priority` and `priorityClassName` name.

A job naming a class that does not exist is refused (Kubernetes refuses such a pod; Arena
checks before it submits). `create NAME --value N` makes one; a higher value is scheduled
first and may preempt lower ones (`--preemption-policy Never`: it waits instead).
"""

from __future__ import annotations

import click

from caldera.cli.common import VerbGroup, cluster, no_headers_option, output_option, table, text
from caldera.cli.output import as_list, emit, emit_names, print_table
from caldera.core.manifest import PRIORITY_CLASS_API
from caldera.system.api import JSON

RESOURCE = "priorityclass.scheduling.k8s.io"


@click.group(cls=VerbGroup)
def priorityclass() -> None:
    """List and create PriorityClasses."""


@priorityclass.command("list")
@output_option
@no_headers_option
@click.pass_context
def list_classes(ctx: click.Context, output: str, no_headers: bool) -> None:
    """The PriorityClasses: value, whether it is the default, preemption policy."""
    classes = cluster(ctx).list_priority_classes()
    if output in ("json", "yaml"):
        emit(as_list(classes), output)
        return
    if output == "name":
        emit_names(f"{RESOURCE}/{_name(pc)}" for pc in classes)
        return
    if not classes and output in ("table", "wide"):
        click.echo("No PriorityClasses (create one: caldera priorityclass create NAME --value N).", err=True)
        return
    t = table("NAME", "VALUE", "GLOBAL-DEFAULT", "PREEMPTION-POLICY")
    for pc in classes:
        t.add_row(_name(pc), text(pc.get("value")), text(pc.get("globalDefault")), text(pc.get("preemptionPolicy")))
    print_table(t, no_headers)


@priorityclass.command("create")
@click.argument("name")
@click.option("--value", type=int, required=True, help="the priority: higher runs first")
@click.option("--global-default", is_flag=True, help="the priority of jobs that name no class")
@click.option(
    "--preemption-policy",
    type=click.Choice(["PreemptLowerPriority", "Never"]),
    default="PreemptLowerPriority",
    show_default=True,
)
@click.option("--description", default="", help="what the class is for")
@click.pass_context
def create(
    ctx: click.Context, name: str, value: int, global_default: bool, preemption_policy: str, description: str
) -> None:
    """Create PriorityClass NAME with a priority VALUE."""
    c = cluster(ctx)
    if any(_name(pc) == name for pc in c.list_priority_classes()):
        raise click.UsageError(f"PriorityClass {name} exists already")
    manifest: JSON = {
        "apiVersion": PRIORITY_CLASS_API,
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": global_default,
        "preemptionPolicy": preemption_policy,
    }
    if description:
        manifest["description"] = description
    c.apply(manifest)
    click.echo(f"{RESOURCE}/{name} created")


def _name(pc: JSON) -> str:
    return str((pc.get("metadata") or {}).get("name"))
