"""The launcher's log: one line per event on stderr, for people, tests and the recovery benchmark.

Shape (fields first, then the event, so a line is grep-able by either):

    caldera-launch 2026-11-21T08:30:01.123Z job=J node=ab12cd34 round=3 world=3 rank=1 master=127.0.0.1:41234 start

The timestamp is wall-clock UTC with milliseconds; `node` is the first 8 hex digits of the
node id ("-" before the launcher has registered). Events (fields first):

    np= nproc= server= ttl= launcher started      host= pod= lease= registered
    waiting for N nodes (have M)                  round= members= failures= proposed
    waiting for acknowledgements (K/N)            round= world= rank= master=H:P start
    round= member left (ids)                      round= a member's workers failed
    round= workers failed (local_rank= pid= code=)    round= workers succeeded
    round= stopping workers (why)                 spare in round N
    lease expired                                 etcd unavailable: ...    etcd reachable again
    node key deleted: registering again           job succeeded|failed in round N
    last node: deleted the job's keys             code= stopped by SIGTERM     code= exit

`world` is WORLD_SIZE (processes), `rank` this node's GROUP_RANK.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import TextIO

from caldera.utils.clock import Clock

PREFIX = "caldera-launch"


def timestamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class EventLog:
    def __init__(self, job_id: str, clock: Clock, stream: TextIO | None = None) -> None:
        self.job_id = job_id
        self.node = ""
        self._clock = clock
        self._stream = stream

    def __call__(self, event: str, **fields: object) -> None:
        parts = [PREFIX, timestamp(self._clock.now()), f"job={self.job_id}", f"node={self.node[:8] or '-'}"]
        parts += [f"{k}={v}" for k, v in fields.items()]
        parts.append(event)
        stream = self._stream if self._stream is not None else sys.stderr
        stream.write(" ".join(parts) + "\n")
        stream.flush()
