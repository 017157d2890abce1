"""Hot-restart checkpoints: rank 0 writes, every rank of the next round reads.

Invariant: the file at `path` is always either absent or a complete checkpoint. A save
writes a temp file in the same directory (`.<name>.<random>.tmp`), flushes and fsyncs
it, then renames it over `path` with `os.replace` (atomic on POSIX) and fsyncs the
directory. A process killed anywhere in between leaves the previous checkpoint intact
and at most a temp file behind, which loading never looks at and the next successful
save removes. A file at `path` that cannot be read is an error, never taken for "no
checkpoint": training silently from scratch would throw away the run.

The file is `torch.save` of a dict: {"format", "epoch", "step", "world_size", "state"}.
torch is imported only inside the functions, so `import caldera.elastic` needs nothing
beyond the standard library.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caldera.elastic.world import world

FORMAT = "caldera.elastic.checkpoint/1"
_TEMP_SUFFIX = ".tmp"


class CheckpointError(Exception):
    """A checkpoint file exists but is not a complete, readable caldera checkpoint."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What `load_checkpoint` found: the saved state and where training stood."""

    path: Path
    epoch: int  # as given to save_checkpoint: by convention the number of completed epochs
    step: int
    world_size: int  # the world size of the round that saved it (the current one may differ)
    state: dict[str, Any]  # whatever was saved; Any because it comes back from disk


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def _is_temp_of(path: Path, candidate: Path) -> bool:
    return candidate.name.startswith(_temp_prefix(path)) and candidate.name.endswith(_TEMP_SUFFIX)


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable (a crash right after os.replace must not undo it)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale_temps(path: Path, older_than: float) -> None:
    """Temp files of saves that crashed before this one began (not a save running now)."""
    for candidate in path.parent.iterdir():
        if not _is_temp_of(path, candidate):
            continue
        with contextlib.suppress(FileNotFoundError):
            if candidate.stat().st_mtime < older_than:
                candidate.unlink()


def save_checkpoint(
    path: str | os.PathLike[str],
    state: Mapping[str, object],
    *,
    epoch: int,
    step: int,
    rank: int | None = None,
) -> bool:
    """Atomically write `state` with `epoch` and `step` to `path`, on rank 0 only.

    `rank` defaults to the RANK variable (0 when unset). Returns True when this process
    wrote the file, False on other ranks, which return at once (no barrier: see the
    package docstring). The directory is created if needed.
    """
    import torch

    epoch, step = _count("epoch", epoch), _count("step", step)
    current = world()
    if (current.rank if rank is None else rank) != 0:
        return False
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": FORMAT,
        "epoch": epoch,
        "step": step,
        "world_size": current.world_size,
        "state": dict(state),
    }
    fd, temp_name = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=_TEMP_SUFFIX, dir=target.parent)
    temp = Path(temp_name)
    try:
        started = os.fstat(fd).st_mtime
        with os.fdopen(fd, "wb") as file:
            torch.save(payload, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise
    _fsync_dir(target.parent)
    _remove_stale_temps(target, older_than=started)
    return True


def _field(payload: Mapping[str, object], name: str, path: Path) -> int:
    value = payload.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CheckpointError(f"{path}: field {name!r} must be a non-negative integer, found {value!r}")
    return value


def load_checkpoint(
    path: str | os.PathLike[str], *, map_location: str = "cpu", weights_only: bool = True
) -> Checkpoint | None:
    """The checkpoint at `path`, or None when there is none yet; every rank calls it.

    A file that is there but truncated, corrupt or not written by `save_checkpoint`
    raises CheckpointError naming the file and the problem. `weights_only=True` (torch's
    safe loader) accepts tensors, numbers, strings and containers of them, which is what
    model and optimizer state dicts are; pass False only for a file you trust that holds
    other Python objects.
    """
    import torch

    source = Path(path)
    try:
        with source.open("rb") as file:
            payload = torch.load(file, map_location=map_location, weights_only=weights_only)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise CheckpointError(f"{source}: is a directory, expected a checkpoint file") from None
    except OSError as exc:
        raise CheckpointError(f"{source}: cannot read the checkpoint: {exc}") from exc
    except Exception as exc:  # torch raises RuntimeError, EOFError, UnpicklingError... for a damaged file
        text = str(exc).strip()
        first_line = text.splitlines()[0] if text else type(exc).__name__
        if weights_only and text.startswith("Weights only load failed"):
            raise CheckpointError(
                f"{source}: holds objects torch's safe loader refuses; if you trust the file,"
                f" load it with weights_only=False: {first_line}"
            ) from exc
        raise CheckpointError(f"{source}: not a readable checkpoint (truncated or corrupt?): {first_line}") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise CheckpointError(f"{source}: not a caldera.elastic checkpoint (format {found!r}, expected {FORMAT!r})")
    state = payload.get("state")
    if not isinstance(state, dict):
        raise CheckpointError(f"{source}: field 'state' must be a dict, found {type(state).__name__}")
    return Checkpoint(
        path=source,
        epoch=_field(payload, "epoch", source),
        step=_field(payload, "step", source),
        world_size=_field(payload, "world_size", source),
        state=state,
    )
