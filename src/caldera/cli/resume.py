"""`caldera resume JOB`: run a suspended job again (Volcano's ResumeJob)."""

from __future__ import annotations

import click

from caldera.cli.common import JOB_RESOURCE, Verb, cluster, complete_jobs, namespace_option


@click.command(cls=Verb)
@click.argument("job", shell_complete=complete_jobs)
@namespace_option
@click.pass_context
def resume(ctx: click.Context, job: str, namespace: str) -> None:
    """Resume JOB after `caldera suspend`: it is scheduled again as a whole."""
    cluster(ctx).command(namespace, job, "ResumeJob")
    click.echo(f"{JOB_RESOURCE}/{job} resumed")
