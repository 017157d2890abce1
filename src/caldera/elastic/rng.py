"""The random generators' state, to put in a checkpoint so a resumed run draws what it would have drawn.

Covers Python's `random` and torch's default CPU generator (and the CUDA ones when CUDA
is available). A generator the script creates itself (`torch.Generator`, a NumPy
`Generator`) is the script's to save, or better, to re-seed from (seed, epoch) so that
it needs no saving at all. Every value is a tensor or nested tuples of numbers, which
torch's safe loader (`weights_only=True`) accepts.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any


def rng_state() -> dict[str, Any]:
    """A snapshot of the process's global generators, for `save_checkpoint`'s state."""
    import torch

    state: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restore what `rng_state` captured (a missing entry leaves that generator as it is)."""
    import torch

    if "python" in state:
        random.setstate(state["python"])
    if "torch" in state:
        torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
