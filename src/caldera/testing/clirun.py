"""Running `caldera` as users do: a separate process, so exit codes and stderr are exactly what they see."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str


def caldera(*args: str | Path, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Result:
    """`python -m caldera.cli.main ARGS` with this interpreter (the virtualenv's), CALDERA_DEBUG unset."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("CALDERA_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "caldera.cli.main", *map(str, args)],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)
