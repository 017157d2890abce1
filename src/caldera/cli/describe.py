"""`caldera describe JOB`: everything known about a job: spec, status, podgroup, pods, events."""

from __future__ import annotations

import click
import yaml
from rich.padding import Padding
from rich.text import Text

from caldera.cli.common import Verb, age, clock, cluster, console, emit, namespace_option, table, task_order, text
from caldera.cli.get import header, pods_table


@click.command(cls=Verb)
@click.argument("job")
@namespace_option
@click.option(
    "-o", "--output", type=click.Choice(["text", "json", "yaml"]), default="text", show_default=True, help="format"
)
@click.pass_context
def describe(ctx: click.Context, job: str, namespace: str, output: str) -> None:
    """Describe JOB: its spec and status, its podgroup, its pods and the events about them."""
    d = cluster(ctx).describe_job(namespace, job)
    if output != "text":
        emit(d, output)
        return
    now = clock(ctx).now()
    obj, summary = d.get("job") or {}, d.get("summary") or {}
    out = console()
    out.print(header(summary, now))
    for title, body in (("Spec", obj.get("spec")), ("Status", obj.get("status"))):
        out.print(f"\n[bold]{title}:[/bold]")
        out.print(Padding(Text(yaml.safe_dump(body or {}, sort_keys=False).rstrip()), (0, 0, 0, 2), expand=False))
    podgroup = d.get("podgroup") or {}
    status = podgroup.get("status") or {}
    out.print(f"\n[bold]PodGroup:[/bold] {text(status.get('phase'))}")
    for c in status.get("conditions") or []:
        if c.get("status") == "True" and c.get("message"):
            out.print(f"  {text(c.get('type'))} ({text(c.get('reason'))}): {text(c.get('message'))}")
    out.print()
    out.print(pods_table(summary, task_order(obj)))
    events = d.get("events") or []
    out.print()
    if not events:
        out.print("Events: <none>")
        return
    t = table("AGE", "KIND", "OBJECT", "NODE", "REASON", "MESSAGE", title="Events")
    for e in events:
        t.add_row(
            age(e.get("time"), now),
            text(e.get("kind")),
            text(e.get("object")),
            text(e.get("node")),
            text(e.get("reason")),
            text(e.get("message")),
        )
    out.print(t)
