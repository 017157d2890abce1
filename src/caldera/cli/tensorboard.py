"""`caldera tensorboard JOB`: the URL of the job's TensorBoard (`caldera submit --tensorboard --logdir D`)."""

from __future__ import annotations

import click

from caldera.cli.common import Verb, cluster, complete_jobs, fail, namespace_option


@click.command(cls=Verb)
@click.argument("job", shell_complete=complete_jobs)
@namespace_option
@click.pass_context
def tensorboard(ctx: click.Context, job: str, namespace: str) -> None:
    """Print the URL of JOB's TensorBoard (it runs while the job exists, also after the job ends)."""
    url = cluster(ctx).get_job(namespace, job).get("tensorboard")
    if not url:
        fail(ctx, f"job {namespace}/{job} has no TensorBoard: submit it with --tensorboard --logdir DIR")
    click.echo(url)
