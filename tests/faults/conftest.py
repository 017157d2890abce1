"""Fault trials by seed: `make test` runs a few, `make faults` the full count; every seed is printed.

  CALDERA_FAULT_TRIALS=N     trials per fault (default 2; `make faults` sets 100)
  CALDERA_FAULT_SEEDS=S,...  exactly these seeds (to replay a failure: its test id names its seed)

Without CALDERA_FAULT_SEEDS the seeds are drawn at random, so each run tries new moments
and mixes; a failure's id (`[seed=123456]`) is all it takes to run it again.
"""

from __future__ import annotations

import os
import random

import pytest


def fault_seeds() -> list[int]:
    given = os.environ.get("CALDERA_FAULT_SEEDS", "").strip()
    if given:
        return [int(s) for s in given.split(",") if s.strip()]
    count = int(os.environ.get("CALDERA_FAULT_TRIALS", "2"))
    draw = random.SystemRandom()
    return [draw.randrange(1_000_000) for _ in range(count)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "seed" in metafunc.fixturenames:
        seeds = fault_seeds()
        print(f"\n{metafunc.function.__name__}: seeds {','.join(map(str, seeds))}")
        metafunc.parametrize("seed", seeds, ids=[f"seed={s}" for s in seeds])
