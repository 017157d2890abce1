"""The values the rendezvous keeps in the key-value store, and their JSON.

Every value is a small JSON document written by one launcher and read by all of them, so a
value this launcher cannot parse (another version, a hand edit) reads as absent rather than
crashing it: `parse_*` return None for anything malformed. Writers always produce the shapes
below; field names are part of the protocol (see `caldera.launcher.rendezvous`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

SUCCEEDED: Literal["succeeded"] = "succeeded"
FAILED: Literal["failed"] = "failed"
Status = Literal["succeeded", "failed"]


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """`nodes/<node_id>`: one launcher, alive while its lease is."""

    host: str
    nproc: int
    pod: str
    pid: int

    def to_json(self) -> str:
        return json.dumps({"host": self.host, "nproc": self.nproc, "pod": self.pod, "pid": self.pid})


@dataclass(frozen=True, slots=True)
class Round:
    """`round`: the current round; `members` are node ids in rank order."""

    round: int
    members: tuple[str, ...]
    failures: int = 0

    def to_json(self) -> str:
        return json.dumps({"round": self.round, "members": list(self.members), "failures": self.failures})


@dataclass(frozen=True, slots=True)
class Ack:
    """`rounds/<n>/ready/<node_id>`: a member is ready for round n, with the ports it picked for it.

    `ports` has one port per local process (its Paddle endpoint); `master_port` is set by rank 0 only.
    """

    host: str
    ports: tuple[int, ...]
    master_port: int | None = None

    def to_json(self) -> str:
        return json.dumps({"host": self.host, "ports": list(self.ports), "master_port": self.master_port})


@dataclass(frozen=True, slots=True)
class Done:
    """`done`: the job ended in `round` with `status`."""

    round: int
    status: Status

    def to_json(self) -> str:
        return json.dumps({"round": self.round, "status": self.status})


def _load(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_node(text: str) -> NodeRecord | None:
    d = _load(text)
    if not isinstance(d, dict):
        return None
    host, nproc, pod, pid = d.get("host"), d.get("nproc"), d.get("pod", ""), d.get("pid", 0)
    if not isinstance(host, str) or not _is_int(nproc) or not isinstance(pod, str) or not _is_int(pid):
        return None
    assert isinstance(nproc, int) and isinstance(pid, int)
    return NodeRecord(host, nproc, pod, pid) if nproc >= 1 else None


def parse_round(text: str) -> Round | None:
    d = _load(text)
    if not isinstance(d, dict):
        return None
    number, members, failures = d.get("round"), d.get("members"), d.get("failures", 0)
    if not _is_int(number) or not _is_int(failures) or not isinstance(members, list):
        return None
    if not all(isinstance(m, str) for m in members) or len(set(members)) != len(members):
        return None
    assert isinstance(number, int) and isinstance(failures, int)
    return Round(number, tuple(members), failures) if number >= 0 and failures >= 0 else None


def parse_ack(text: str) -> Ack | None:
    d = _load(text)
    if not isinstance(d, dict):
        return None
    host, ports, master = d.get("host"), d.get("ports"), d.get("master_port")
    if not isinstance(host, str) or not isinstance(ports, list) or not ports:
        return None
    if not all(_is_int(p) and 0 < p < 65536 for p in ports):
        return None
    if master is not None and not (_is_int(master) and 0 < master < 65536):
        return None
    return Ack(host, tuple(ports), master)


def parse_done(text: str) -> Done | None:
    d = _load(text)
    if not isinstance(d, dict):
        return None
    number, status = d.get("round"), d.get("status")
    if not _is_int(number) or status not in (SUCCEEDED, FAILED):
        return None
    assert isinstance(number, int)
    return Done(number, SUCCEEDED if status == SUCCEEDED else FAILED)


def parse_np(text: str) -> int | None:
    value = _load(text)
    if not _is_int(value):
        return None
    assert isinstance(value, int)
    return value if value >= 1 else None
