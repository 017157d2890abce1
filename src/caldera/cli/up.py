"""`caldera up`: start the daemon in the background, or say where the running one listens.

Idempotent: a daemon whose process lives and whose /info answers is left alone. A new
daemon is `python -m caldera.server` in its own session (it outlives the shell), its
output appended to `$CALDERA_HOME/daemon.log`; `up` returns once it answers, or fails
with the end of that log if the daemon exits first or does not answer in time.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import click

from caldera.cli.common import Verb, clock, context, fail, home, waiting
from caldera.client import Client, read_daemon, read_token, running_daemon
from caldera.client.home import LOG_FILE
from caldera.core.errors import CalderaError
from caldera.core.nodelabels import node_labels_flag, node_taints_flag
from caldera.scheduler.config import DEFAULT_POLICY
from caldera.scheduler.policies import RUNNABLE, chosen_config
from caldera.system.api import JSON
from caldera.utils.clock import Clock

POLL_SECONDS = 0.1


def _checked(
    parse: Callable[[str], object],
) -> Callable[[click.Context, click.Parameter, tuple[str, ...]], tuple[str, ...]]:
    """A callback refusing a value `parse` refuses (a usage error now, not a daemon that fails to start)."""

    def callback(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            try:
                parse(value)
            except ValueError as e:
                raise click.BadParameter(str(e), ctx, param) from None
        return values

    return callback


@click.command(cls=Verb)
@click.option("--nodes", type=click.IntRange(min=1), help="virtual nodes partitioning this machine [default: 1]")
@click.option("--cpus-per-node", metavar="QTY", help="CPUs of each virtual node (e.g. 2, 1500m)")
@click.option("--memory-per-node", metavar="QTY", help="memory of each virtual node (e.g. 4Gi)")
@click.option("--gpus-per-node", type=click.IntRange(min=0), help="GPUs per node (virtual if the machine has none)")
@click.option(
    "--elastic-server",
    metavar="HOST:PORT",
    help="etcd for elastic jobs [default: one the daemon starts, if etcd is installed]",
)
@click.option(
    "--node-labels",
    multiple=True,
    metavar="[NODE:]K=V,...",
    callback=_checked(node_labels_flag),
    help="labels of every node, or of NODE (repeatable); jobs pick nodes with --selector",
)
@click.option(
    "--node-taints",
    multiple=True,
    metavar="[NODE:]K[=V]:EFFECT,...",
    callback=_checked(node_taints_flag),
    help="taints of every node, or of NODE (repeatable); jobs need --toleration to run there",
)
@click.option(
    "--policy",
    metavar="NAME",
    help=f"the scheduler's policy, a shipped one: {', '.join(RUNNABLE)} (default: {DEFAULT_POLICY})",
)
@click.option(
    "--scheduler-config",
    type=click.Path(dir_okay=False),
    help="the scheduler's configuration, a YAML file in Volcano's format (instead of --policy)",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="address the API listens on")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="API port (0: a free one)")
@click.option("--timeout", type=click.FloatRange(min=0), default=60.0, show_default=True, help="seconds to wait")
@click.pass_context
def up(
    ctx: click.Context,
    nodes: int | None,
    cpus_per_node: str | None,
    memory_per_node: str | None,
    gpus_per_node: int | None,
    elastic_server: str | None,
    node_labels: tuple[str, ...],
    node_taints: tuple[str, ...],
    policy: str | None,
    scheduler_config: str | None,
    host: str,
    port: int,
    timeout: float,
) -> None:
    """Start the caldera daemon in the background (nothing to do if it already runs)."""
    where = home(ctx).resolve()
    try:  # refused here, before a daemon starts and fails
        chosen_config(policy, scheduler_config)
    except CalderaError as e:
        fail(ctx, str(e))
    clk = clock(ctx)
    deadline = clk.now() + timeout
    if running_daemon(where) is not None:
        found = _await_answer(where, None, clk, deadline)
        if found is not None:
            url, info = found
            click.echo(f"caldera is already up at {url} (home {where}, {_nodes(info)} nodes)")
            if any(v is not None for v in (nodes, cpus_per_node, memory_per_node, gpus_per_node)) or (
                node_labels or node_taints
            ):
                click.echo(
                    "caldera: the node options apply to a new daemon: `caldera down` first"
                    " (labels and taints: `caldera node label|taint`)",
                    err=True,
                )
            if policy or scheduler_config:
                click.echo("caldera: the scheduler's policy applies to a new daemon: `caldera down` first", err=True)
            return
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    args = ["--home", str(where), "--host", host, "--port", str(port)]
    for flag, value in (
        ("--nodes", nodes),
        ("--cpus-per-node", cpus_per_node),
        ("--memory-per-node", memory_per_node),
        ("--gpus-per-node", gpus_per_node),
        ("--elastic-server", elastic_server),
        ("--policy", policy),
        ("--scheduler-config", str(Path(scheduler_config).resolve()) if scheduler_config else None),
    ):
        if value is not None:
            args += [flag, str(value)]
    for flag, values in (("--node-labels", node_labels), ("--node-taints", node_taints)):
        for value in values:
            args += [flag, value]
    pid = _spawn(context(ctx).server_module, args, where / LOG_FILE)
    with waiting(f"starting caldera (pid {pid}) ..."):
        found = _await_answer(where, pid, clk, deadline)
    if found is None:
        log = where / LOG_FILE
        if _exited(pid):
            fail(ctx, f"the daemon stopped at start: {_last_line(log)} (see {log})")
        fail(ctx, f"the daemon did not answer within {timeout:g}s (see {log})")
    url, info = found
    click.echo(f"caldera is up at {url} (home {where}, {_nodes(info)} nodes)")


def _spawn(module: str, args: list[str], log: Path) -> int:
    """`python -m module args` in a new session, detached from this terminal; its pid."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(log), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    argv = [sys.executable, "-m", module, *args]
    # posix_spawn rather than Popen: nothing in this process waits for the daemon, by design.
    return os.posix_spawn(sys.executable, argv, dict(os.environ), file_actions=actions, setsid=True)


def _await_answer(where: Path, pid: int | None, clk: Clock, deadline: float) -> tuple[str, JSON] | None:
    """(url, /info) once the daemon of `where` (process `pid`, if given) answers; None if it died or time ran out."""
    while True:
        daemon = read_daemon(where)
        alive = running_daemon(where) is not None
        if daemon is not None and alive and pid in (None, daemon.pid):
            try:
                with Client(daemon.url, read_token(where), timeout=5.0) as client:
                    return daemon.url, client.info()
            except CalderaError:
                pass  # not answering yet
        if pid is not None and _exited(pid):
            return None
        if pid is None and not alive:
            return None
        if clk.now() >= deadline:
            return None
        clk.sleep(POLL_SECONDS)


def _exited(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done == pid


def _nodes(info: JSON) -> int:
    nodes = info.get("nodes")
    return len(nodes) if isinstance(nodes, list) else int(nodes or 0)


def _last_line(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1].strip() if lines else "no log"
