"""`caldera logs JOB [-i POD] [-f] [-t N] [-p] [--since D] [--timestamps]`: a pod's log; by default the chief's.

The chief is the first pod of the job's chief, master or launcher task, else worker 0
(a TF job without a chief), else trainer 0 (`common.chief_pod`): never a parameter
server. When the job has several pods and none is chosen, the instances are listed on
stderr, so stdout stays the log alone. `-i` takes a pod name or its short form (`worker-1`).
With `-f`, a job whose pods do not exist yet, or a pod that has not started, is waited
for; the stream ends when the pod does. `--since 5m` / `--since-time T` keep the lines
written from then on and `--timestamps` prefixes each line with when it was written, as
kubectl's (the embedded cluster notes when each line came: `server/logtimes.py`). The log
holds every attempt of the pod (a restart in place, or a whole-job restart), each opening
with a header line; `-p/--previous` shows only the attempt before the last one, as
`kubectl logs --previous`. Pods that ended and were removed (the servers of a job that
completed) keep their logs until the job is deleted.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

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
from caldera.core.duration import parse_duration
from caldera.system.api import JSON, NotFound
from caldera.utils.clock import Clock

POLL_SECONDS = 0.5


def _since(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = parse_duration(value)
    except ValueError as e:
        raise click.BadParameter(str(e), ctx, param) from None
    if seconds <= 0:
        raise click.BadParameter(f"{value!r} must be more than 0", ctx, param)
    return seconds


def _since_time(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an RFC 3339 time (2024-05-01T12:00:00Z)", ctx, param) from None


@click.command(cls=Verb)
@click.argument("job", shell_complete=complete_jobs)
@click.option("-i", "--instance", metavar="POD", help="the pod to show (default: the chief, master or worker 0)")
@click.option("-f", "--follow", is_flag=True, help="keep streaming until the pod ends")
@click.option("-t", "--tail", type=int, default=-1, show_default=True, help="only the last N lines (-1: all)")
@click.option("--since", metavar="DURATION", callback=_since, help="only lines of the last DURATION (5s, 2m, 1h30m)")
@click.option("--since-time", metavar="RFC3339", callback=_since_time, help="only lines from this time on")
@click.option("--timestamps", is_flag=True, help="each line after the time it was written (RFC 3339)")
@click.option("-p", "--previous", is_flag=True, help="the attempt before the last one (after a restart)")
@namespace_option
@click.pass_context
def logs(
    ctx: click.Context,
    job: str,
    instance: str | None,
    follow: bool,
    tail: int,
    since: float | None,
    since_time: float | None,
    timestamps: bool,
    previous: bool,
    namespace: str,
) -> None:
    """Print the log of one of JOB's pods (default: the chief: the master, launcher or worker 0)."""
    if previous and follow:
        fail(ctx, "--previous and --follow do not go together: an earlier attempt has ended")
    if previous and (since is not None or since_time is not None or timestamps):
        fail(ctx, "--previous goes with neither --since, --since-time nor --timestamps")
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
    if previous:
        for chunk in c.stream_log(namespace, pod, tail=tail, previous=True):
            click.echo(chunk, nl=False)
        return
    if since is not None and since_time is not None:
        raise click.UsageError("give --since or --since-time, not both")
    reading = Reading(follow, tail, None if since is None else math.ceil(since), timestamps, since_time)
    for chunk in _stream(c, namespace, job, pod, reading, clk):
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


@dataclass(frozen=True, slots=True)
class Reading:
    """How much of the log, and how: -f, -t, --since (in whole seconds, as Kubernetes'), --timestamps, --since-time."""

    follow: bool
    tail: int
    since_seconds: int | None
    timestamps: bool
    since_time: float | None  # seconds since the epoch


def _stream(c: Cluster, namespace: str, job: str, pod: str, r: Reading, clk: Clock) -> Iterator[str]:
    """The pod's log; with `follow`, a pod with no log yet (not started) is waited for while the job lives."""
    while True:
        try:
            if r.since_seconds is None and r.since_time is None and not r.timestamps:
                yield from c.stream_log(namespace, pod, follow=r.follow, tail=r.tail)
            else:
                yield from c.stream_log(
                    namespace,
                    pod,
                    follow=r.follow,
                    tail=r.tail,
                    since_seconds=r.since_seconds,
                    timestamps=r.timestamps,
                    since_time=r.since_time,
                )
            return
        except NotFound:
            if not r.follow or c.get_job(namespace, job).get("phase") in FINISHED_JOB_PHASES:
                raise
        clk.sleep(POLL_SECONDS)
