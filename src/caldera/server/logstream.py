"""Streaming a pod's log file: its last N lines, then (with follow) what is appended, until the pod ends.

Invariant: following stops only after the pod was seen finished *and* the file was
then read to its end, so nothing the pod wrote is lost; a client that disconnects
stops the stream at once (the server cancels the generator while it waits).
The file may not exist yet (the pod has not started): that is an empty log so far.
`--previous` reads one earlier attempt's part of the file, whole or its last N lines.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from caldera.backends.process import attempt_spans
from caldera.system.api import ClusterAPI, NotFound

CHUNK = 64 * 1024
POLL_SECONDS = 0.2
FINISHED_POD_PHASES = frozenset({"Succeeded", "Failed"})


def tail_offset(path: Path, lines: int | None, end: int | None = None) -> int:
    """The byte offset where the last `lines` lines of `path` (of its first `end` bytes) begin.

    None or negative `lines`: the whole file (0)."""
    if lines is None or lines < 0:
        return 0
    try:
        size = path.stat().st_size if end is None else end
    except FileNotFoundError:
        return 0
    if lines == 0 or size == 0:
        return size
    with path.open("rb") as f:
        f.seek(size - 1)
        # A final newline ends the last line; it does not start another one.
        pos = size - 1 if f.read(1) == b"\n" else size
        found = 0
        while pos > 0:
            start = max(0, pos - 8192)
            f.seek(start)
            block = f.read(pos - start)
            end = len(block)
            while (end := block.rfind(b"\n", 0, end)) >= 0:
                found += 1
                if found == lines:
                    return start + end + 1
            pos = start
    return 0


def read_chunk(path: Path, offset: int) -> tuple[bytes, int]:
    """Up to CHUNK bytes of `path` from `offset`, and the offset after them (a truncated file restarts at 0)."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, 2)
            if size < offset:
                offset = 0
            f.seek(offset)
            data = f.read(CHUNK)
    except FileNotFoundError:
        return b"", offset
    return data, offset + len(data)


async def stream_file(
    path: Path,
    *,
    tail: int | None,
    follow: bool,
    finished: Callable[[], Awaitable[bool]],
    poll: float = POLL_SECONDS,
) -> AsyncIterator[bytes]:
    offset = tail_offset(path, tail)
    while True:
        data, offset = read_chunk(path, offset)
        if data:
            yield data
            continue
        if not follow:
            return
        if await finished():
            while True:  # drain what the pod wrote before it ended
                data, offset = read_chunk(path, offset)
                if not data:
                    return
                yield data
        await asyncio.sleep(poll)


def previous_span(path: Path, pod: str) -> tuple[int, int]:
    """The byte range of the attempt before the last in a pod's log; NotFound if it has run once at most."""
    spans = attempt_spans(path)
    if len(spans) < 2:
        raise NotFound(
            f"pod {pod} has no previous attempt (it has run {len(spans)} time{'' if len(spans) == 1 else 's'})"
        )
    return spans[-2]


async def stream_span(path: Path, start: int, end: int, tail: int | None) -> AsyncIterator[bytes]:
    """Bytes [start, end) of `path`, or only their last `tail` lines."""
    offset = max(start, tail_offset(path, tail, end))
    while offset < end:
        data, _ = read_chunk(path, offset)
        if not data:
            return
        data = data[: end - offset]
        offset += len(data)
        yield data


class PodWatch:
    """Whether a pod has finished, as its job's summary says (a pod no job has any more has finished)."""

    def __init__(self, cluster: ClusterAPI, namespace: str, pod: str) -> None:
        self._cluster = cluster
        self._namespace = namespace
        self._pod = pod
        self._job: str | None = None

    def finished(self) -> bool:
        if self._job is None:
            for job in self._cluster.list_jobs(self._namespace):
                for p in job.get("pods", []):
                    if p.get("name") == self._pod:
                        self._job = str(job["name"])
                        return p.get("phase") in FINISHED_POD_PHASES
            return True
        try:
            summary = self._cluster.get_job(self._namespace, self._job)
        except NotFound:
            return True
        for p in summary.get("pods", []):
            if p.get("name") == self._pod:
                return p.get("phase") in FINISHED_POD_PHASES
        return True
