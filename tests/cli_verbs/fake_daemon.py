"""A daemon over a FakeCluster: `python -m tests.cli_verbs.fake_daemon`, run by `caldera up` in tests.

It lives the real daemon's life (`caldera.server.__main__.run`: lock, token, listen,
daemon.json, serve, shutdown) with a fake in place of the EmbeddedCluster, and says
in its log (daemon.log) how the cluster was shut down. With CALDERA_FAKE_DAEMON_FAIL
set it fails at start, as a daemon with a broken cluster would.

`VerbsFake` is the FakeCluster with `watch` playing the events a test scripted
(`watch_events`; a callable among them is called when the watch reaches it, to change the
cluster between two events). The verb tests use it too.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from caldera.server.__main__ import run
from caldera.system.api import JSON, ClusterAPI
from caldera.testing.fake_cluster import DEFAULT_NODE, FakeCluster
from caldera.utils.clock import Clock


class VerbsFake(FakeCluster):
    def __init__(self, log_dir: Path, *, clock: Clock | None = None, nodes: list[JSON] | None = None) -> None:
        super().__init__(log_dir, clock=clock, nodes=nodes)
        self.watch_events: list[JSON | Callable[[], object]] = []
        self.watches: list[tuple[tuple[str, ...], str | None]] = []

    def watch(
        self,
        kinds: tuple[str, ...] = (),
        namespace: str | None = None,
        since: int | None = None,
        timeout: float | None = None,
    ) -> Iterator[JSON]:
        self.watches.append((kinds, namespace))
        for event in self.watch_events:
            if callable(event):
                event()
            else:
                yield event


class LoggingFake(VerbsFake):
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
