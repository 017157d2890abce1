"""A pod's log by time: `--since` (only what was written after a moment) and `--timestamps` (each line stamped).

The local executor's shim notes when lines of a log began in `log.times` beside it
(`OFFSET SECONDS` a line, one for each read of the pod's output, written before the data:
see `backends/shim.py`). A line takes the time of the last note at or before its offset;
lines older than the notes (a log written before caldera kept them) take the first note's,
or the file's mtime. With
timestamps a line reads as kubectl prints it: `2024-05-01T12:00:03.123456Z <line>`.
Invariant: the lines are the log's bytes unchanged, only prefixed; a line still being
written is held until its newline, or until the pod has ended.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from caldera.server.logstream import POLL_SECONDS, read_chunk, tail_offset

TIMES_FILE = "log.times"  # `caldera.backends.shim.TIMES_FILE`, beside the log


class LineTimes:
    """The notes of one log, read as it grows."""

    def __init__(self, log: Path) -> None:
        self._path = log.with_name(TIMES_FILE)
        self._log = log
        self._read = 0  # bytes of the notes file read so far
        self.offsets: list[int] = []
        self.times: list[float] = []

    def refresh(self) -> None:
        data, _ = read_chunk(self._path, self._read)
        while data:
            complete = data[: data.rfind(b"\n") + 1]
            for line in complete.decode(errors="replace").splitlines():
                offset, _, seconds = line.partition(" ")
                try:
                    at, when = int(offset), float(seconds)
                except ValueError:
                    continue
                if not self.offsets or at > self.offsets[-1]:
                    self.offsets.append(at)
                    self.times.append(when)
            self._read += len(complete)
            if len(complete) < len(data):
                break
            data, _ = read_chunk(self._path, self._read)

    def at(self, offset: int) -> float:
        """When the line starting at `offset` was written."""
        i = bisect.bisect_right(self.offsets, offset) - 1
        if i >= 0:
            return self.times[i]
        if self.times:
            return self.times[0]
        try:
            return self._log.stat().st_mtime
        except OSError:
            return 0.0

    def first_since(self, moment: float) -> int | None:
        """The offset of the first line written at or after `moment` (None: no such line yet)."""
        i = next((i for i, t in enumerate(self.times) if t >= moment), None)
        return None if i is None else self.offsets[i]


def rfc3339_nano(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def stream_lines(
    path: Path,
    *,
    tail: int | None,
    since: float | None,
    timestamps: bool,
    follow: bool,
    finished: Callable[[], Awaitable[bool]],
    poll: float = POLL_SECONDS,
) -> AsyncIterator[bytes]:
    """The log line by line from the later of its last `tail` lines and the first line written at `since`."""
    times = LineTimes(path)
    times.refresh()
    offset = tail_offset(path, tail)
    if since is not None:
        first = times.first_since(since)
        offset = max(offset, first) if first is not None else _size(path)
    pending = b""
    start = offset  # where `pending` begins in the log
    done = False
    while True:
        data, offset = read_chunk(path, offset)
        if data:
            times.refresh()
            pending += data
            *lines, pending = pending.split(b"\n")
            out = []
            for line in lines:
                out.append(_stamped(line + b"\n", start, times, timestamps))
                start += len(line) + 1
            if out:
                yield b"".join(out)
            continue
        if done or not follow:
            if pending:
                times.refresh()
                yield _stamped(pending, start, times, timestamps)
            return
        if await finished():
            done = True  # drain what the pod wrote before it ended, then stop
            continue
        await asyncio.sleep(poll)


def _stamped(line: bytes, offset: int, times: LineTimes, timestamps: bool) -> bytes:
    return (rfc3339_nano(times.at(offset)) + " ").encode() + line if timestamps else line


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
