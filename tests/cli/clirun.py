"""Running `caldera` as users do: a separate process, so exit codes and stderr are exactly what they see."""

from __future__ import annotations

from pathlib import Path

from caldera.testing.clirun import Result as Result
from caldera.testing.clirun import caldera as caldera

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
EXAMPLES = REPO / "examples" / "simulate"
