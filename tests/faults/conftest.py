"""Fault trials by seed: `make test` runs a few, `make faults` the full count; every seed is printed.

  CALDERA_FAULT_TRIALS=N     trials per fault (default 2; `make faults` sets 100)
  CALDERA_FAULT_SEEDS=S,...  exactly these seeds (to replay a failure: its test id names its seed)

A trial that costs much more than the kill -9 one (a training job, a filesystem filled) says so
with `@pytest.mark.trials(share)`: it runs `share` of N trials, at least one.

Without CALDERA_FAULT_SEEDS the seeds are drawn at random, so each run tries new moments
and mixes; a failure's id (`[seed=123456]`) is all it takes to run it again.
"""

from __future__ import annotations

import math
import os
import random

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "trials(share): this fault runs `share` of CALDERA_FAULT_TRIALS (at least 1)")


def fault_seeds(share: float = 1.0) -> list[int]:
    given = os.environ.get("CALDERA_FAULT_SEEDS", "").strip()
    if given:
        return [int(s) for s in given.split(",") if s.strip()]
    count = max(1, math.ceil(int(os.environ.get("CALDERA_FAULT_TRIALS", "2")) * share - 1e-9))
    draw = random.SystemRandom()
    return [draw.randrange(1_000_000) for _ in range(count)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "seed" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("trials")
        seeds = fault_seeds(float(marker.args[0]) if marker else 1.0)
        print(f"\n{metafunc.function.__name__}: seeds {','.join(map(str, seeds))}")
        metafunc.parametrize("seed", seeds, ids=[f"seed={s}" for s in seeds])
