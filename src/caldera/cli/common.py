"""What the verbs over the API share: how they reach the cluster, their options, exit codes and output.

Exit codes (one rule for every verb):
  0  done;
  1  the command ran but the answer is "no": `wait` timed out, or the job ended in
     another phase than the one waited for;
  2  the command could not do what was asked: a usage error, invalid input, an unknown
     job, queue or pod ("job default/x not found"), a conflict, no daemon. One line on
     stderr (`caldera: error: ...`), as `caldera.cli.main.main` prints CalderaErrors.

The cluster is found through click's context object: a `CliContext` whose `cluster`
is set (tests pass `obj=CliContext(cluster=fake)` to CliRunner.invoke) or, when it is
not, a `KubeCluster` on the API server of `caldera --kubeconfig PATH` (or
`$CALDERA_KUBECONFIG`), else a `Client` connected to the daemon of `$CALDERA_HOME`. Waiting uses the context's
clock, so tests of `wait` run on a ManualClock.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

import click
from click.shell_completion import CompletionItem
from rich.console import Console

from caldera.cli.output import TextTable
from caldera.cli.verb import Verb as Verb  # re-exported: the verbs import them from here
from caldera.cli.verb import fail as fail
from caldera.client import connect, home_dir
from caldera.core.errors import CalderaError
from caldera.core.selector import Selector, parse_selector
from caldera.system.api import JSON, ClusterAPI
from caldera.utils.clock import Clock, SystemClock

F = TypeVar("F", bound=Callable[..., Any])
FINISHED_JOB_PHASES = ("Completed", "Failed", "Terminated", "Aborted")  # as `wait` reads them
JOB_RESOURCE = "job.batch.volcano.sh"
QUEUE_RESOURCE = "queue.scheduling.volcano.sh"
_CLIENT = "caldera.client"


class Cluster(ClusterAPI, Protocol):
    """What the verbs use: the cluster's API, the pod logs as text and watch events (a `Client`, or a fake)."""

    def stream_log(
        self,
        namespace: str,
        pod: str,
        follow: bool = False,
        tail: int | None = None,
        since_seconds: int | None = None,
        timestamps: bool = False,
        since_time: float | None = None,
        previous: bool = False,
    ) -> Iterator[str]: ...

    def watch(
        self,
        kinds: tuple[str, ...] = (),
        namespace: str | None = None,
        since: int | None = None,
        timeout: float | None = None,
    ) -> Iterator[JSON]: ...


@dataclass(slots=True)
class CliContext:
    cluster: Cluster | None = None
    home: Path | None = None
    clock: Clock = field(default_factory=SystemClock)
    server_module: str = "caldera.server"  # what `caldera up` runs (tests: a daemon over a fake cluster)
    kubeconfig: str | None = None  # `caldera --kubeconfig PATH`: the verbs talk to that Kubernetes cluster


def context(ctx: click.Context) -> CliContext:
    found = ctx.find_object(CliContext)
    return found if found is not None else ctx.ensure_object(CliContext)


def cluster(ctx: click.Context) -> Cluster:
    """The cluster this invocation talks to: the context's, or the daemon's (connected once, closed at the end)."""
    c = context(ctx)
    if c.cluster is not None:
        return c.cluster
    client: Cluster | None = ctx.meta.get(_CLIENT)
    if client is None:
        if c.kubeconfig:
            from caldera.client.kube import connect_kube  # the Kubernetes client only when it is asked for

            kube = connect_kube(c.kubeconfig)
            ctx.call_on_close(kube.close)
            client = kube
        else:
            daemon = connect(c.home)
            ctx.call_on_close(daemon.close)
            client = daemon
        ctx.meta[_CLIENT] = client
    return client


def home(ctx: click.Context) -> Path:
    return home_dir(context(ctx).home)


def clock(ctx: click.Context) -> Clock:
    return context(ctx).clock


# ---------------------------------------------------------------- commands and errors


class VerbGroup(click.Group):
    """A group of Verbs (`caldera queue ...`, `caldera top ...`)."""

    command_class = Verb


def namespace_option(f: F) -> F:
    return click.option("-n", "--namespace", default="default", show_default=True, help="the job's namespace")(f)


def all_namespaces_option(f: F) -> F:
    return click.option("-A", "--all-namespaces", is_flag=True, help="every namespace (kubectl's -A)")(f)


def output_option(f: F) -> F:
    """`-o table|wide|name|json|yaml`, as kubectl's (a list in JSON or YAML is one `List`)."""
    choice = click.Choice(["table", "wide", "name", "json", "yaml"])
    return click.option("-o", "--output", type=choice, default="table", show_default=True, help="output format")(f)


def no_headers_option(f: F) -> F:
    return click.option("--no-headers", is_flag=True, help="tables without their header line")(f)


def _selector(ctx: click.Context, param: click.Parameter, value: str | None) -> Selector | None:
    try:
        return None if value is None else parse_selector(value)
    except ValueError as e:
        raise click.BadParameter(str(e), ctx, param) from None


def selector_option(f: F) -> F:
    return click.option(
        "-l",
        "--selector",
        metavar="SELECTOR",
        callback=_selector,
        help="only jobs whose labels match (k=v, k!=v, 'k in (a,b)', k, !k; comma-separated, all must hold)",
    )(f)


def complete_jobs(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Shell completion of a job name: the jobs of the namespace given so far (`-n`), with their phase.

    A shell asks this at every Tab: a daemon that does not answer means no completions, never an error."""
    namespace = ctx.params.get("namespace") or "default"
    try:
        jobs = cluster(ctx).list_jobs(None if ctx.params.get("all_namespaces") else namespace)
    except CalderaError:
        return []
    return [
        CompletionItem(str(j["name"]), help=str(j.get("phase") or ""))
        for j in jobs
        if str(j["name"]).startswith(incomplete)
    ]


def complete_queues(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    try:
        names = [str(q["metadata"]["name"]) for q in cluster(ctx).list_queues()]
    except CalderaError:
        return []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def complete_nodes(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    try:
        names = [str(n["name"]) for n in cluster(ctx).list_nodes()]
    except CalderaError:
        return []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def select_jobs(c: ClusterAPI, namespace: str | None, selector: Selector | None) -> list[JSON]:
    """The summaries of the jobs of `namespace` (None: all) whose labels match `selector`."""
    jobs = c.list_jobs(namespace)
    return jobs if selector is None else [j for j in jobs if selector.matches(j.get("labels"))]


# ---------------------------------------------------------------- tables


def console(stderr: bool = False) -> Console:
    """A rich console (spinners on a terminal); when piped, wide enough that names are never cut."""
    c = Console(stderr=stderr, highlight=False, soft_wrap=False)
    if not c.is_terminal:
        c.width = int(os.environ.get("COLUMNS") or 200)
    return c


def table(*columns: str, title: str | None = None) -> TextTable:
    return TextTable(*columns, title=title)


def text(value: object) -> str:
    """A table cell: `-` when absent."""
    return "-" if value is None or value == "" else str(value)


# ---------------------------------------------------------------- jobs, pods and time


# Whose log `caldera logs` shows when no pod is named (Arena: the chief): the first pod of the first
# of these tasks the job has. A parameter server is never it: a TF job without a chief has worker 0
# as its chief, and a Paddle job's trainers do the training (a Kubeflow PaddleJob's Master is its server).
CHIEF_TASKS = ("chief", "master", "launcher", "worker", "trainer")
CHIEF_TASKS_BY_TYPE = {"PaddleJob": ("trainer", "worker")}


def ordered_pods(summary: JSON, tasks: list[str] | None = None) -> list[JSON]:
    """The job's pods in rank order: task by task (spec order if known), each by index."""
    pods: list[JSON] = list(summary.get("pods") or [])
    order = list(tasks or [])
    for p in pods:
        if str(p.get("task")) not in order:
            order.append(str(p.get("task")))
    return sorted(pods, key=lambda p: (order.index(str(p.get("task"))), int(p.get("index") or 0), str(p.get("name"))))


def chief_pod(summary: JSON, pods: list[JSON]) -> JSON:
    """The pod whose log speaks for the job (see CHIEF_TASKS); the first of `pods` when no task is one of those."""
    preferred = CHIEF_TASKS_BY_TYPE.get(str(summary.get("type") or ""), CHIEF_TASKS)
    for task in preferred:
        of_task = [p for p in pods if p.get("task") == task]
        if of_task:
            return min(of_task, key=lambda p: int(p.get("index") or 0))
    return pods[0]


def waiting_reason(summary: JSON) -> str:
    """`list`'s REASON column: why the job is held up ("" if nothing holds it up)."""
    return str((summary.get("waiting") or {}).get("reason") or "")


def task_order(job: JSON) -> list[str]:
    """The task names of a full job object, in spec order."""
    return [str(t.get("name")) for t in (job.get("spec") or {}).get("tasks") or []]


def pods_running(summary: JSON) -> str:
    pods = summary.get("pods") or []
    return f"{sum(1 for p in pods if p.get('phase') == 'Running')}/{len(pods)}"


def timestamp(value: object) -> float | None:
    """Seconds since the epoch, from a number or an RFC 3339 text; None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def human_duration(seconds: float | None) -> str:
    """`42s`, `5m3s`, `2h10m`, `3d4h` (kubectl's spirit)."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60}s" if s % 60 else f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60}m" if s % 3600 // 60 else f"{s // 3600}h"
    return f"{s // 86400}d{s % 86400 // 3600}h" if s % 86400 // 3600 else f"{s // 86400}d"


def age(value: object, now: float) -> str:
    t = timestamp(value)
    return "-" if t is None else human_duration(now - t)


def job_duration(summary: JSON, now: float) -> str:
    """How long the job has run: from its start to its completion, or to now."""
    start = timestamp(summary.get("startTime"))
    if start is None:
        return "-"
    end = timestamp(summary.get("completionTime"))
    return human_duration((end if end is not None else now) - start)


@contextmanager
def waiting(message: str) -> Iterator[Callable[[str], None]]:
    """A spinner on stderr while something is awaited (on a terminal only); yields its `update`."""
    c = console(stderr=True)
    if not c.is_terminal:
        yield lambda _: None
        return
    with c.status(message) as status:
        yield status.update
