"""A pod as the local executor sees it: its spec, its events, and its directory on disk.

A pod's directory, ``<home>/pods/<ns>/<name>/``, holds
  log             stdout+stderr of every attempt, appended; each attempt opens with a header line
  log.times       when lines of the log were written: "OFFSET SECONDS", a line from there on came then (the shim's)
  proc.json       the attempt that runs, or whose end was not handed out yet: pid, pgid, start_ticks, attempt, argv
  proc.done.json  the last attempt whose end was handed out (kept for post-mortems)
  exit            written by the shim when an attempt ends: exit_code, attempt, finished_at
  unstarted       written by the shim whose gate closed with no order: the attempt, of which nothing ran
  ...             the files the spec asked for (hosts files, ...)

Invariant: proc.json exists exactly while an attempt has been started and its end not yet handed
out; `retire` (proc.json → proc.done.json) is the hand-out.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from caldera.backends.shim import EXIT_FILE, TIMES_FILE, UNSTARTED_FILE, read_json

LOG_FILE = "log"
ATTEMPT_HEADER = re.compile(rb"=== attempt \d+ started \S+ ===\r?\n?")  # opens each attempt's part of the log
PROC_FILE = "proc.json"
DONE_FILE = "proc.done.json"
_RESERVED = frozenset({LOG_FILE, PROC_FILE, DONE_FILE, EXIT_FILE, TIMES_FILE, UNSTARTED_FILE})

EventKind = Literal["exited", "stopped", "running"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessSpec:
    """One attempt of a pod, fully rendered by the caller.

    `env` is the command's whole environment, passed exactly as given: the caller renders
    everything, GPUs included (CUDA_VISIBLE_DEVICES). `pod_dir` must be `pod_dir(home, key)`;
    `cwd` defaults to it; `files` (path relative to the pod dir → content) are written before the
    start.
    """

    key: str  # "namespace/name"
    argv: tuple[str, ...]
    env: Mapping[str, str]
    pod_dir: str
    cwd: str | None = None
    files: Mapping[str, str] = field(default_factory=dict)
    attempt: int = 0

    @property
    def workdir(self) -> str:
        return self.cwd or self.pod_dir


@dataclass(frozen=True, slots=True)
class ProcessEvent:
    """What became of a pod's attempt. `exit_code` is a shell's: 128+N for a death by signal N.

    "exited": it ended on its own; "stopped": it ended after stop(); "running": found alive by
    adopt(). `time` is when it ended as the shim recorded it, else when the executor saw it.
    """

    key: str
    kind: EventKind
    exit_code: int | None
    attempt: int
    time: float
    note: str = ""


@dataclass(frozen=True, slots=True)
class ProcRecord:
    """proc.json: which process an attempt is, so a later executor can find it again."""

    pid: int  # the shim's; also the id of its process group (it is a session leader)
    start_ticks: int  # with the pid, the process's identity (pids are reused)
    attempt: int

    @staticmethod
    def load(path: Path) -> ProcRecord | None:
        data = read_json(path)
        try:
            return ProcRecord(*(int(str(data[k])) for k in ("pid", "start_ticks", "attempt"))) if data else None
        except (KeyError, ValueError):
            return None

    def to_json(self, argv: tuple[str, ...]) -> dict[str, object]:
        return {
            "pid": self.pid,
            "pgid": self.pid,
            "start_ticks": self.start_ticks,
            "attempt": self.attempt,
            "argv": list(argv),
        }


@dataclass(frozen=True, slots=True)
class Outcome:
    """An `exit` file: how an attempt ended, as its shim recorded it."""

    exit_code: int
    finished_at: float

    @staticmethod
    def load(where: Path, attempt: int) -> Outcome | None:
        """The recorded end of `attempt` of the pod in `where`; None if none (or another attempt's)."""
        data = _read_json(os.path.join(where, EXIT_FILE))
        if not data or data.get("attempt") != attempt:
            return None
        try:
            return Outcome(int(str(data["exit_code"])), float(str(data["finished_at"])))
        except (KeyError, ValueError):
            return None


def _read_json(path: str) -> dict[str, object] | None:
    """`shim.read_json` on a plain descriptor (no text file object: the watcher reads every pod's exit)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        data = json.loads(b"".join(chunks))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) else None


def pod_dir(home: Path, key: str) -> Path:
    """The directory of pod `key` ("namespace/name") under caldera home `home`."""
    parts = key.split("/")
    if len(parts) != 2 or any(p in ("", ".", "..") or "\0" in p for p in parts):
        raise ValueError(f"pod key {key!r}: expected 'namespace/name'")
    return Path(os.path.abspath(home)) / "pods" / parts[0] / parts[1]


def key_of(where: Path) -> str:
    return f"{where.parent.name}/{where.name}"


def check(spec: ProcessSpec, home: Path) -> Path:
    """The spec's pod directory, after checking the spec can be run as given."""
    where = pod_dir(home, spec.key)
    if Path(os.path.abspath(spec.pod_dir)) != where:
        raise ValueError(f"pod {spec.key}: pod_dir must be {where}, not {spec.pod_dir}")
    if not spec.argv:
        raise ValueError(f"pod {spec.key}: empty command")
    for name in spec.files:
        rel = Path(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts or rel.parts[0] in _RESERVED:
            raise ValueError(f"pod {spec.key}: file {name!r} must be a relative path inside the pod dir")
    return where


def prepare(spec: ProcessSpec, where: Path, now: float) -> Path:
    """Make the pod directory ready for the attempt (files written, old exit gone, log header); the log's path.

    Done for every start by the starter threads: plain descriptors, no file objects."""
    base = os.fspath(where)
    os.makedirs(base, exist_ok=True)
    for name, content in spec.files.items():
        path = where / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    for stale in (EXIT_FILE, UNSTARTED_FILE):  # the previous attempt's, or this one's before it was started again
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(base, stale))
    started = datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds")
    fd = os.open(os.path.join(base, LOG_FILE), os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        # If the last attempt died mid-line, the header still starts a line of its own.
        torn = end > 0 and os.pread(fd, 1, end - 1) != b"\n"
        header_at = end + int(torn)
        os.write(fd, (("\n" if torn else "") + f"=== attempt {spec.attempt} started {started} ===\n").encode())
    finally:
        os.close(fd)
    fd = os.open(os.path.join(base, TIMES_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:  # the shim notes the lines that follow
        os.write(fd, f"{header_at} {now:.6f}\n".encode())
    finally:
        os.close(fd)
    return where / LOG_FILE


def attempt_spans(log: Path) -> list[tuple[int, int]]:
    """The byte ranges [start, end) of each attempt's part of a pod's log, oldest first ([] if no log)."""
    starts: list[int] = []
    try:
        with open(log, "rb") as f:
            offset = 0
            for line in f:  # the header always starts a line: `prepare` ends a torn last line first
                if ATTEMPT_HEADER.fullmatch(line):
                    starts.append(offset)
                offset += len(line)
    except FileNotFoundError:
        return []
    return list(zip(starts, [*starts[1:], offset], strict=True)) if starts else []


def retire(where: Path) -> None:
    """Mark the attempt's end as handed out: no later adopt() will return it again."""
    with contextlib.suppress(FileNotFoundError):
        os.replace(where / PROC_FILE, where / DONE_FILE)
