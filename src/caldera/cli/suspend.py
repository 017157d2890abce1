"""`caldera suspend JOB`: stop a job's pods and keep the job, to resume later (Volcano's AbortJob)."""

from __future__ import annotations

import click

from caldera.cli.common import JOB_RESOURCE, Verb, cluster, complete_jobs, namespace_option


@click.command(cls=Verb)
@click.argument("job", shell_complete=complete_jobs)
@namespace_option
@click.pass_context
def suspend(ctx: click.Context, job: str, namespace: str) -> None:
    """Suspend JOB: its pods stop, the job stays (Aborted) until `caldera resume`."""
    cluster(ctx).command(namespace, job, "AbortJob")
    click.echo(f"{JOB_RESOURCE}/{job} suspended")
