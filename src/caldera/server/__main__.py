"""`python -m caldera.server`: the daemon process that `caldera up` starts in the background.

  python -m caldera.server --home H [--host 127.0.0.1] [--port 0]
                           [--nodes N --cpus-per-node C --memory-per-node M --gpus-per-node G]
                           [--node-labels [NODE:]K=V,... --node-taints [NODE:]K[=V]:EFFECT,...]

Order of life: lock the home (one daemon per home) → token → listen (port 0: a free
one) → start the cluster (restores its state, adopts surviving pods) → write
`daemon.json` → serve. It ends on POST /shutdown (stopping pods if asked: `caldera
down`) or on SIGTERM/SIGINT (pods keep running, to be adopted by the next daemon);
either way the server stops first, then the cluster, then `daemon.json` goes.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import uvicorn

from caldera import __version__
from caldera.core.errors import CalderaError
from caldera.server.app import create_app
from caldera.server.home import (
    load_or_create_token,
    lock_home,
    prepare_home,
    remove_daemon_file,
    write_daemon_file,
)
from caldera.system.api import ClusterAPI

log = logging.getLogger("caldera.server")


def main(argv: list[str] | None = None) -> int:
    return run(_embedded_cluster, argv)


def run(make_cluster: Callable[[Path, argparse.Namespace], ClusterAPI], argv: list[str] | None = None) -> int:
    """The daemon's life over the cluster `make_cluster(home, args)` builds and starts (tests: a fake)."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.scheduler_config:  # before the chdir below
        args.scheduler_config = os.path.abspath(args.scheduler_config)
    home = prepare_home(Path(args.home))
    os.chdir(home)  # a daemon pins no directory of the shell that started it
    try:
        lock = lock_home(home)
    except CalderaError as e:
        print(f"caldera: error: {e}", file=sys.stderr)
        return 1
    with lock:
        try:
            sock = _listen(args.host, args.port)
        except OSError as e:
            print(f"caldera: error: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
            return 1
        with sock:
            token = load_or_create_token(home)
            try:
                cluster = make_cluster(home, args)
            except CalderaError as e:  # a wrong --policy or --scheduler-config, named by the error
                print(f"caldera: error: {e}", file=sys.stderr)
                return 1
            serve(cluster, token, home, sock, _url(args.host, sock.getsockname()[1]))
    return 0


def _embedded_cluster(home: Path, args: argparse.Namespace) -> ClusterAPI:
    # The wiring is imported only when a daemon really starts.
    from caldera.scheduler.policies import chosen_config
    from caldera.system.daemon import EmbeddedCluster

    cluster = EmbeddedCluster(
        home,
        nodes=args.nodes,
        cpus_per_node=args.cpus_per_node,
        memory_per_node=args.memory_per_node,
        gpus_per_node=args.gpus_per_node,
        elastic_server=args.elastic_server,
        node_labels=args.node_labels,
        node_taints=args.node_taints,
        scheduler=chosen_config(args.policy, args.scheduler_config),
    )
    cluster.start()
    return cluster


def serve(cluster: ClusterAPI, token: str, home: Path, sock: socket.socket, url: str) -> None:
    """Serve the API on `sock` until shutdown; then stop the cluster and remove `daemon.json`."""
    stop_pods: list[bool] = []

    def on_shutdown(stop: bool) -> None:
        stop_pods.append(stop)
        server.should_exit = True

    app = create_app(cluster, token, on_shutdown=on_shutdown)
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="off", timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    # uvicorn turns SIGTERM/SIGINT into a graceful stop, then raises the signal again for the
    # handler it found: a quiet one here, so that the cluster is still shut down below.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: None)
    write_daemon_file(home, url)
    # What start-up built (modules, the restored state) lives as long as the daemon: the collector
    # need not walk it again at every full collection (it grows with the jobs a busy daemon holds).
    gc.freeze()
    log.info("caldera %s listening on %s (home %s, pid %d)", __version__, url, home, os.getpid())
    try:
        server.run(sockets=[sock])
    finally:
        try:
            stop = bool(stop_pods and stop_pods[-1])
            log.info("shutting down (%s)", "stopping pods" if stop else "pods keep running")
            cluster.shutdown(stop_pods=stop)
        finally:
            remove_daemon_file(home)
            log.info("caldera daemon stopped")


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on connections of a socket that says so, and without it
    # every answer on a kept-alive connection waits 40 ms for a delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _url(host: str, port: int) -> str:
    """Where a local client reaches a server bound to `host` (a wildcard address means loopback)."""
    connect = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{connect}]:{port}" if ":" in connect else f"http://{connect}:{port}"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m caldera.server", description="The caldera daemon (see `caldera up`).")
    default_home = os.environ.get("CALDERA_HOME") or "~/.caldera"
    p.add_argument("--home", default=default_home, help="state directory (default: $CALDERA_HOME or ~/.caldera)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port to listen on (default 0: a free one)")
    p.add_argument("--nodes", type=int, help="virtual nodes partitioning this machine")
    p.add_argument("--cpus-per-node", help="CPUs of each virtual node (a quantity)")
    p.add_argument("--memory-per-node", help="memory of each virtual node (a quantity)")
    p.add_argument("--gpus-per-node", type=int, help="GPUs of each node (virtual when the machine has none)")
    p.add_argument("--elastic-server", help="etcd HOST:PORT for elastic jobs (default: start one if etcd is installed)")
    p.add_argument("--node-labels", action="append", default=[], help="[NODE:]K=V[,K=V]: labels of every node, or one")
    p.add_argument(
        "--node-taints", action="append", default=[], help="[NODE:]K[=V]:EFFECT[,...]: taints of every node, or one"
    )
    p.add_argument("--policy", help="the scheduler's policy: a shipped one by name (default: caldera-default)")
    p.add_argument("--scheduler-config", help="the scheduler's configuration: a YAML file in Volcano's format")
    return p


if __name__ == "__main__":
    sys.exit(main())
