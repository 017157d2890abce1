"""What a framework plugin adds to one pod: environment variables and files, and how patches combine.

Files are relative paths inside the pod's directory (the executor writes them before
starting the pod; Volcano mounts the same content from ConfigMaps). Invariant: a
merged patch never silently drops a value: two plugins that disagree about one
variable or one file make the job unrenderable, with both values named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from caldera.core.errors import CalderaError


class PluginError(CalderaError, ValueError):
    """A job whose plugins cannot be rendered; the message names the plugin, the flag or task, and the rule."""


@dataclass(frozen=True, slots=True)
class PodPatch:
    env: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)  # relative path in the pod's directory → content

    def merge(self, other: PodPatch) -> PodPatch:
        """Both patches together; equal values may repeat (every framework sets PYTHONUNBUFFERED=1)."""
        return PodPatch(
            env=_union(self.env, other.env, "environment variable"),
            files=_union(self.files, other.files, "file"),
        )


def _union(a: Mapping[str, str], b: Mapping[str, str], what: str) -> dict[str, str]:
    out = dict(a)
    for key, value in b.items():
        if key in out and out[key] != value:
            raise PluginError(f"job plugins disagree about {what} {key}: {out[key]!r} and {value!r}")
        out[key] = value
    return out
