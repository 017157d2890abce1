"""`caldera down`: stop the daemon and every pod it runs; nothing to do when it is not running.

The daemon is asked over the API (POST /shutdown?stopPods=true); `down` returns once
its process is gone, so a `caldera up` right after starts afresh.
"""

from __future__ import annotations

import contextlib

import click

from caldera.cli.common import Verb, clock, cluster, context, fail, home, waiting
from caldera.client import Client, pid_alive, read_token, running_daemon
from caldera.client.home import DAEMON_FILE
from caldera.core.errors import CalderaError

POLL_SECONDS = 0.1


@click.command(cls=Verb)
@click.option("--timeout", type=click.FloatRange(min=0), default=120.0, show_default=True, help="seconds to wait")
@click.pass_context
def down(ctx: click.Context, timeout: float) -> None:
    """Stop the caldera daemon and the pods it runs."""
    if context(ctx).kubeconfig:
        cluster(ctx).shutdown()  # a Kubernetes cluster has no daemon to stop: it says what to do instead
    where = home(ctx)
    daemon = running_daemon(where)
    if daemon is None:
        with contextlib.suppress(OSError):
            (where / DAEMON_FILE).unlink()  # stale: its process is gone
        click.echo("caldera is not running")
        return
    clk = clock(ctx)
    deadline = clk.now() + timeout
    try:
        with Client(daemon.url, read_token(where), timeout=timeout) as client:
            client.shutdown(stop_pods=True)
    except CalderaError:
        if pid_alive(daemon.pid):
            raise
    with waiting(f"stopping caldera (pid {daemon.pid}) and its pods ..."):
        while pid_alive(daemon.pid):
            if clk.now() >= deadline:
                fail(ctx, f"the daemon (pid {daemon.pid}) is still stopping after {timeout:g}s")
            clk.sleep(POLL_SECONDS)
    click.echo("caldera is down")
