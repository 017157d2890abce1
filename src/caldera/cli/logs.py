"""`caldera logs JOB [-i POD] [-f] [-t N]`: a pod's log; by default the chief's, as Arena.

The chief is the first pod of the job's chief, master or launcher task, else worker 0
(a TF job without a chief), else trainer 0 (`common.chief_pod`): never a parameter
server. When the job has several pods and none is chosen, the instances are listed on
stderr, so stdout stays the log alone. `-i` takes a pod name or its short form (`worker-1`).
With `-f`, a job whose pods do not exist yet, or a pod that has not started, is waited
for; the stream ends when the pod does.
"""

from __future__ import annotations

from collections.abc import Iterator

import click

from caldera.cli.common import (
    FINISHED_JOB_PHASES,
    Cluster,
    Verb,
    chief_pod,
    clock,
    cluster,
    complete_jobs,
    fail,
    namespace_option,
    ordered_pods,
    task_order,
    waiting,
)
from caldera.system.api import JSON, NotFound
from caldera.utils.clock import Clock

POLL_SECONDS = 0.5


@click.command(cls=Verb)
@click.argument("job", shell_complete=complete_jobs)
@click.option("-i", "--instance", metavar="POD", help="the pod to show (default: the chief, master or worker 0)")
@click.option("-f", "--follow", is_flag=True, help="keep streaming until the pod ends")
@click.option("-t", "--tail", type=int, default=-1, show_default=True, help="only the last N lines (-1: all)")
@namespace_option
@click.pass_context
def logs(ctx: click.Context, job: str, instance: str | None, follow: bool, tail: int, namespace: str) -> None:
    """Print the log of one of JOB's pods (default: the chief: the master, launcher or worker 0)."""
    c, clk = cluster(ctx), clock(ctx)
    pods = _pods(c, namespace, job, follow, clk)
    if not pods:
        fail(ctx, f"job {namespace}/{job} has no pods yet (it is {c.get_job(namespace, job).get('phase')})")
    names = [str(p["name"]) for p in pods]
    if instance is None:
        pod = str(chief_pod(c.get_job(namespace, job), pods)["name"])
        if len(names) > 1:
            listed = ", ".join(names)
            click.echo(
                f"job {namespace}/{job} has {len(names)} instances: {listed}; showing {pod} (choose with -i)", err=True
            )
    elif instance in names:
        pod = instance
    elif f"{job}-{instance}" in names:
        pod = f"{job}-{instance}"
    else:
        fail(ctx, f"{instance} is not an instance of job {namespace}/{job} (instances: {', '.join(names)})")
    for chunk in _stream(c, namespace, job, pod, follow, tail, clk):
        click.echo(chunk, nl=False)


def _pods(c: Cluster, namespace: str, job: str, follow: bool, clk: Clock) -> list[JSON]:
    """The job's pods in rank order; with `follow`, waiting until there are some (or the job ended)."""
    with waiting(f"waiting for the pods of job {namespace}/{job} ..."):
        while True:
            d = c.describe_job(namespace, job)
            summary = d.get("summary") or {}
            pods = ordered_pods(summary, task_order(d.get("job") or {}))
            if pods or not follow or summary.get("phase") in FINISHED_JOB_PHASES:
                return pods
            clk.sleep(POLL_SECONDS)


def _stream(c: Cluster, namespace: str, job: str, pod: str, follow: bool, tail: int, clk: Clock) -> Iterator[str]:
    """The pod's log; with `follow`, a pod with no log yet (not started) is waited for while the job lives."""
    while True:
        try:
            yield from c.stream_log(namespace, pod, follow=follow, tail=tail)
            return
        except NotFound:
            if not follow or c.get_job(namespace, job).get("phase") in FINISHED_JOB_PHASES:
                raise
        clk.sleep(POLL_SECONDS)
