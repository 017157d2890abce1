"""`caldera scale JOB --replicas N [--task T]`: change how many pods a task of a job has (an elastic job grows or shrinks)."""

from __future__ import annotations

import click

from caldera.cli.common import JOB_RESOURCE, Verb, cluster, complete_jobs, namespace_option
from caldera.cli.output import emit


@click.command(cls=Verb)
@click.argument("job", shell_complete=complete_jobs)
@click.option("--replicas", type=click.IntRange(min=0), required=True, help="the task's number of pods")
@click.option("--task", help="the task to scale (default: the job's elastic task)")
@namespace_option
@click.option("-o", "--output", type=click.Choice(["text", "json", "yaml"]), default="text", show_default=True)
@click.pass_context
def scale(ctx: click.Context, job: str, replicas: int, task: str | None, namespace: str, output: str) -> None:
    """Set the replicas of a task of JOB; an elastic job's launchers re-form the group with the new size."""
    summary = cluster(ctx).scale_job(namespace, job, replicas, task)
    if output != "text":
        emit(summary, output)
        return
    click.echo(f"{JOB_RESOURCE}/{job} scaled")
