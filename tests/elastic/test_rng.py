"""rng_state / set_rng_state: a resumed process draws the numbers the interrupted one would have drawn."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from caldera.elastic import load_checkpoint, rng_state, save_checkpoint, set_rng_state

torch = pytest.importorskip("torch")


def draws() -> tuple[float, list[float]]:
    return random.random(), torch.rand(4).tolist()


def test_the_generators_resume_where_the_checkpoint_left_them(tmp_path: Path) -> None:
    random.seed(7)
    torch.manual_seed(7)
    draws()
    save_checkpoint(tmp_path / "last.pt", {"rng": rng_state()}, epoch=1, step=1)
    expected = draws()

    random.seed(99)  # a new process starts elsewhere
    torch.manual_seed(99)
    loaded = load_checkpoint(tmp_path / "last.pt")  # the safe loader accepts the saved state
    assert loaded is not None
    set_rng_state(loaded.state["rng"])

    assert draws() == expected
