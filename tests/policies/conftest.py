"""The Philly sample replayed once per test session under the policies the tests compare."""

from __future__ import annotations

from typing import Any

import pytest

from caldera.sim.engine import Simulation

from . import philly

Run = tuple[Simulation, dict[str, Any]]


@pytest.fixture(scope="session")
def philly_runs() -> dict[str, Run]:
    if not philly.TRACE.exists():
        pytest.skip(f"the Philly trace is not at {philly.TRACE}")
    return {p: philly.simulate(p) for p in ("volcano-default", "las")}
