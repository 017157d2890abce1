"""Plugin arguments as Volcano passes them: Go-style flags (`--port=23456`, `-port=23456`, `--port 23456`).

Parsed as `caldera.core.validation` parses the mpi plugin's flags, so admission and
rendering read the same manifest the same way. A task named explicitly by a flag
must exist; a task only defaulted (`--master` left out) may be absent, which is how
plugins tell a master/worker job from a worker-only one.
"""

from __future__ import annotations

from collections.abc import Sequence

from caldera.controller.frameworks.patch import PluginError
from caldera.core.objects import Job, TaskSpec

_TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})
_FALSE = frozenset({"0", "f", "F", "false", "FALSE", "False"})


def flag(args: Sequence[str], name: str) -> str | None:
    """The value of flag `name` in `args`, or None when it is not given."""
    for i, arg in enumerate(args):
        key, eq, value = arg.lstrip("-").partition("=")
        if arg.startswith("-") and key == name:
            if eq:
                return value
            if i + 1 < len(args):
                return args[i + 1]
    return None


def bool_flag(plugin: str, args: Sequence[str], name: str, default: bool) -> bool:
    """A Go bool flag: `--name` alone is true; `--name=false` turns it off (a bool never takes the next arg)."""
    for arg in args:
        key, eq, value = arg.lstrip("-").partition("=")
        if arg.startswith("-") and key == name:
            if not eq or value in _TRUE:
                return True
            if value in _FALSE:
                return False
            raise PluginError(f"{plugin} plugin: --{name}={value} is not a boolean (true or false)")
    return default


def port_flag(plugin: str, args: Sequence[str], default: int) -> int:
    """`--port`: the container port the framework listens on in every pod of its tasks."""
    raw = flag(args, "port")
    if raw is None:
        return default
    try:
        port = int(raw)
    except ValueError:
        port = 0
    if not 0 < port < 65536:
        raise PluginError(f"{plugin} plugin: --port={raw} is not a port number (1-65535)")
    return port


def role_task(job: Job, plugin: str, args: Sequence[str], role: str, default: str) -> TaskSpec | None:
    """The task that plays `role` (`--<role>=NAME`, else `default`); None when only the default is missing."""
    named = flag(args, role)
    task = job.spec.task(default if named is None else named)
    if task is None and named is not None:
        raise PluginError(f'{plugin} plugin: --{role}={named} names no task of job "{job.name}"')
    return task


def names(*tasks: TaskSpec | None) -> set[str]:
    """The names of the tasks that exist among `tasks` (roles left out are None)."""
    return {t.name for t in tasks if t is not None}
