"""`caldera controller`: caldera's job controller and scheduler for a Kubernetes cluster (Volcano's drop-in).

Runs until SIGTERM or SIGINT (then gives its Lease up, so a standby takes over at once). With
leader election (the default) it first waits to hold the Lease; it exits with code 1 if it
loses it, as client-go's controllers do, to be restarted as a standby.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path
from types import FrameType

import click

from caldera.backends.kube.client import KubeClient
from caldera.backends.kube.kubeconfig import KubeConfig, in_cluster, load_kubeconfig
from caldera.backends.kube.lease import LeaseTimes
from caldera.cli.verb import Verb, fail  # not cli.common: its imports would slow the start-up
from caldera.core.errors import CalderaError
from caldera.scheduler.config import DEFAULT_POLICY
from caldera.scheduler.policies import RUNNABLE, chosen_config
from caldera.system.kubernetes import STARTED, KubeController, LeaderLost, Settings


def _config(kubeconfig: str | None, context: str | None) -> KubeConfig:
    if kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster()
    return load_kubeconfig(kubeconfig, context)


@click.command(cls=Verb)
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    help="kubeconfig (default: in-cluster, else $KUBECONFIG, else ~/.kube/config)",
)
@click.option("--context", help="the kubeconfig's context to use (default: its current one)")
@click.option(
    "--scheduler-name",
    default="caldera",
    show_default=True,
    help="the schedulerName of the pods caldera creates and binds",
)
@click.option("--elastic-server", default="", metavar="HOST:PORT", help="etcd of elastic jobs' launchers")
@click.option(
    "--leader-elect/--no-leader-elect", default=True, show_default=True, help="act only while holding the Lease"
)
@click.option(
    "--lease-namespace", default=None, help="namespace of the Lease (default: the pod's, else the kubeconfig's)"
)
@click.option(
    "--lease-duration",
    type=click.FloatRange(min=2),
    default=10.0,
    show_default=True,
    help="seconds a silent leader keeps the Lease",
)
@click.option(
    "--id", "identity", default="", help="this replica's name in the Lease (default: $POD_NAME, else host and pid)"
)
@click.option(
    "--policy",
    metavar="NAME",
    help=f"the scheduler's policy, a shipped one: {', '.join(RUNNABLE)} (default: {DEFAULT_POLICY})",
)
@click.option(
    "--scheduler-config",
    type=click.Path(dir_okay=False),
    help="the scheduler's configuration, a YAML file in Volcano's format (what volcano-scheduler.conf holds)",
)
@click.option("-v", "--verbose", count=True, help="log more (-v info, -vv debug)")
@click.pass_context
def controller(
    ctx: click.Context,
    kubeconfig: Path | None,
    context: str | None,
    scheduler_name: str,
    elastic_server: str,
    leader_elect: bool,
    lease_namespace: str | None,
    lease_duration: float,
    identity: str,
    policy: str | None,
    scheduler_config: str | None,
    verbose: int,
) -> None:
    """Run caldera's job controller and scheduler against a Kubernetes cluster (Volcano's API)."""
    logging.basicConfig(
        level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("caldera.kube").info(STARTED)  # its time: the process's start-up (imports)
    try:  # refused before anything connects
        scheduler = chosen_config(policy, scheduler_config)
    except CalderaError as e:
        fail(ctx, str(e))
    config = _config(str(kubeconfig) if kubeconfig else None, context)
    times = LeaseTimes(
        lease_duration=lease_duration, renew_deadline=lease_duration * 0.7, retry_period=min(2.0, lease_duration / 5)
    )
    settings = Settings(
        scheduler_name=scheduler_name,
        elastic_server=elastic_server,
        leader_election=leader_elect,
        lease_namespace=lease_namespace or config.namespace or "default",
        identity=identity or os.environ.get("POD_NAME", ""),  # the Deployment sets it (the downward API)
        lease_times=times,
        scheduler=scheduler,
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with KubeClient(config, user_agent=f"caldera-controller/{scheduler_name}") as kube:
        try:
            KubeController(kube, settings).run(stop)
        except LeaderLost as e:
            fail(ctx, str(e), 1)
