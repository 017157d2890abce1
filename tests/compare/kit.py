"""Inputs for comparison tests: the repository's small examples and policy files written in tmp_path."""

from __future__ import annotations

from pathlib import Path

from caldera.testing.clirun import Result as Result
from caldera.testing.clirun import caldera as caldera

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
