"""A daemon over a FakeCluster: `python -m tests.cli_verbs.fake_daemon`, run by `caldera up` in tests.

It lives the real daemon's life (`caldera.server.__main__.run`: lock, token, listen,
daemon.json, serve, shutdown) with a fake in place of the EmbeddedCluster, and says
in its log (daemon.log) how the cluster was shut down. With CALDERA_FAKE_DAEMON_FAIL
set it fails at start, as a daemon with a broken cluster would.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from caldera.server.__main__ import run
from caldera.system.api import ClusterAPI
from caldera.testing.fake_cluster import DEFAULT_NODE, FakeCluster


class LoggingFake(FakeCluster):
    def shutdown(self, stop_pods: bool = True) -> None:
        super().shutdown(stop_pods)
        print(f"fake cluster shut down (stop_pods={stop_pods})", flush=True)


def make(home: Path, args: argparse.Namespace) -> ClusterAPI:
    if os.environ.get("CALDERA_FAKE_DAEMON_FAIL"):
        raise SystemExit("caldera: error: the fake cluster is broken on purpose")
    nodes = [{**DEFAULT_NODE, "name": f"node-{i}"} for i in range(args.nodes or 1)]
    return LoggingFake(home / "pods", nodes=nodes)


if __name__ == "__main__":
    sys.exit(run(make))
