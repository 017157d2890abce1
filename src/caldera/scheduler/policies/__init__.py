"""Scheduling policies shipped with caldera: scheduler configurations in Volcano's format, by name.

| name               | what it is                                                                     |
|--------------------|--------------------------------------------------------------------------------|
| fifo-nogang        | pods one at a time in strict arrival order, no gang (head of line never passed) |
| kube-default       | kube-scheduler: pods one at a time, an unschedulable pod requeued behind later ones |
| gang-fifo-backfill | whole gangs in arrival order, later jobs that fit start first, no preemption    |
| volcano-default    | Volcano's Helm default: gang and queue shares, no preemption                   |
| caldera-default    | caldera's default: gang, queue shares, least attained service, gang-aware preempt |
| las                | Tiresias' discretised 2D least attained service (dlas-gpu), with promotion     |
| srtf               | oracle yardstick: shortest remaining time first (simulation only)              |
| srtf-gpu           | oracle yardstick: shortest remaining GPU-time first (simulation only)          |

Each is a YAML file next to this module whose comments say what it does and
why its arguments are what they are. `load_policy` takes a name or a path to a
YAML file of the same format.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from caldera.core.errors import CalderaError, FieldError, ValidationError
from caldera.scheduler.config import SchedulerConfig, parse_config

POLICIES = (
    "fifo-nogang",
    "kube-default",
    "gang-fifo-backfill",
    "volcano-default",
    "caldera-default",
    "las",
    "srtf",
    "srtf-gpu",
)

ORACLES = ("srtf", "srtf-gpu")  # they read each job's run time: only the simulator knows it
RUNNABLE = tuple(p for p in POLICIES if p not in ORACLES)


class UnknownPolicy(CalderaError):
    """Neither a shipped policy's name nor a file."""


def policy_text(name: str) -> str:
    """The YAML of a shipped policy (its comments included)."""
    if name not in POLICIES:
        raise UnknownPolicy(f"unknown policy {name!r} (known: {', '.join(POLICIES)}; or a path to a YAML file)")
    return resources.files(__name__).joinpath(f"{name}.yaml").read_text(encoding="utf-8")


def load_policy(name_or_path: str) -> SchedulerConfig:
    """A shipped policy by name, or the scheduler configuration in the YAML file at `name_or_path`."""
    if name_or_path in POLICIES:
        return parse_config(policy_text(name_or_path), f"policy {name_or_path}")
    path = Path(name_or_path)
    if path.suffix.lower() in (".yaml", ".yml") or path.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ValidationError([FieldError("", f"cannot read the policy file: {e}")], name_or_path) from None
        return parse_config(text, name_or_path)
    return parse_config(policy_text(name_or_path), name_or_path)  # raises UnknownPolicy, naming the policies


def chosen_config(policy: str | None, config_file: str | None) -> SchedulerConfig | None:
    """What a real cluster's `--policy NAME` or `--scheduler-config FILE` ask for (None: neither, the built-in default).

    Raises a CalderaError naming the flag, the file and the rule when the choice is wrong."""
    if policy and config_file:
        raise ValidationError([FieldError("--policy", "give --policy or --scheduler-config, not both")])
    if policy:
        if policy in ORACLES:
            raise ValidationError(
                [
                    FieldError(
                        "--policy", f"{policy} is the simulator's yardstick: it reads each job's run time, unknown here"
                    )
                ]
            )
        if policy not in POLICIES:
            raise UnknownPolicy(f"--policy: unknown policy {policy!r} (known: {', '.join(RUNNABLE)})")
        return load_policy(policy)
    if config_file:
        try:
            text = Path(config_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ValidationError(
                [FieldError("--scheduler-config", f"cannot read the file: {e}")], config_file
            ) from None
        return parse_config(text, config_file)
    return None
