"""`caldera describe JOB`: everything known about a job: spec, status, podgroup, pods, events."""

from __future__ import annotations

import click
import yaml

from caldera.cli.common import Verb, age, clock, cluster, complete_jobs, namespace_option, table, task_order, text
from caldera.cli.get import header_lines, pods_table
from caldera.cli.output import emit, print_table, with_rfc3339


@click.command(cls=Verb)
@click.argument("job", shell_complete=complete_jobs)
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
    for line in header_lines(summary, now):
        click.echo(line)
    for title, body in (("Spec", obj.get("spec")), ("Status", obj.get("status"))):
        click.echo(f"\n{title}:")
        for line in yaml.safe_dump(with_rfc3339(body or {}), sort_keys=False).rstrip().splitlines():
            click.echo(f"  {line}".rstrip())
    podgroup = d.get("podgroup") or {}
    status = podgroup.get("status") or {}
    click.echo(f"\nPodGroup: {text(status.get('phase'))}")
    for c in status.get("conditions") or []:
        if c.get("status") == "True" and c.get("message"):
            click.echo(f"  {text(c.get('type'))} ({text(c.get('reason'))}): {text(c.get('message'))}")
    click.echo()
    print_table(pods_table(summary, task_order(obj)))
    events = d.get("events") or []
    click.echo()
    if not events:
        click.echo("Events: <none>")
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
    print_table(t)
