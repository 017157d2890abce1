"""Where this training process stands in the current round, read from the launcher's environment.

`caldera launch` (like torchrun) starts every training process of a round with RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, TORCHELASTIC_RESTART_COUNT and
TORCHELASTIC_RUN_ID, and restarts all of them with new values when the membership
changes. `world()` reads them once; a malformed value is an `ElasticEnvError` naming
the variable, never a silent default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

ROUND_VARIABLE = "CALDERA_ELASTIC_ROUND"


class ElasticEnvError(ValueError):
    """A variable of the launcher's environment is malformed or inconsistent."""


@dataclass(frozen=True, slots=True)
class World:
    """This process in the current round; unset variables give a world of one."""

    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    restart_count: int  # how many times the launcher restarted the processes (0 on the first run)
    round: int  # the rendezvous round; the restart count when the launcher does not say
    run_id: str

    @property
    def is_restart(self) -> bool:
        """True when this process was started by a hot restart: look for a checkpoint."""
        return self.restart_count > 0


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ElasticEnvError(f"{name}={text!r} is not an integer") from None
    if value < 0:
        raise ElasticEnvError(f"{name}={value} must not be negative")
    return value


def world(env: Mapping[str, str] | None = None) -> World:
    """Read the current round from `env` (default: os.environ)."""
    env = os.environ if env is None else env
    rank = _int(env, "RANK", 0)
    world_size = _int(env, "WORLD_SIZE", 1)
    local_rank = _int(env, "LOCAL_RANK", 0)
    local_world_size = _int(env, "LOCAL_WORLD_SIZE", max(1, local_rank + 1))
    restart_count = _int(env, "TORCHELASTIC_RESTART_COUNT", 0)
    if world_size < 1:
        raise ElasticEnvError(f"WORLD_SIZE={world_size} must be at least 1")
    if rank >= world_size:
        raise ElasticEnvError(f"RANK={rank} is outside WORLD_SIZE={world_size} (ranks are 0..{world_size - 1})")
    if local_rank >= local_world_size:
        raise ElasticEnvError(f"LOCAL_RANK={local_rank} is outside LOCAL_WORLD_SIZE={local_world_size}")
    if local_world_size > world_size:
        raise ElasticEnvError(f"LOCAL_WORLD_SIZE={local_world_size} is larger than WORLD_SIZE={world_size}")
    return World(
        rank=rank,
        local_rank=local_rank,
        world_size=world_size,
        local_world_size=local_world_size,
        restart_count=restart_count,
        round=_int(env, ROUND_VARIABLE, restart_count),
        run_id=env.get("TORCHELASTIC_RUN_ID", ""),
    )
