"""`caldera delete JOB...`: stop a job's pods and remove it."""

from __future__ import annotations

import click

from caldera.cli.common import JOB_RESOURCE, Verb, cluster, complete_jobs, namespace_option


@click.command(cls=Verb)
@click.argument("jobs", metavar="JOB...", nargs=-1, required=True, shell_complete=complete_jobs)
@namespace_option
@click.pass_context
def delete(ctx: click.Context, jobs: tuple[str, ...], namespace: str) -> None:
    """Stop the pods of each JOB and remove it."""
    c = cluster(ctx)
    for name in jobs:
        c.delete_job(namespace, name)
        click.echo(f"{JOB_RESOURCE}/{name} deleted")
