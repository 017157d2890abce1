"""Inputs for comparison tests: the repository's small examples and policy files written in tmp_path."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
BUSY = ("--cluster", FIXTURES / "sim-busy-cluster.yaml", "--workload", FIXTURES / "sim-busy-workload.yaml")

NO_PREEMPT = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def policy_file(tmp_path: Path, name: str = "no-preempt", text: str = NO_PREEMPT) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str


def caldera(*args: str | Path) -> Result:
    """`python -m caldera.cli.main ARGS` in a separate process, as users run it."""
    env = {k: v for k, v in os.environ.items() if k != "CALDERA_DEBUG"}
    proc = subprocess.run(
        [sys.executable, "-m", "caldera.cli.main", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)
