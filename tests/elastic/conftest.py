"""The elastic tests need torch (and the example, scikit-learn); the launcher's variables of the shell are cleared."""

from __future__ import annotations

import pytest

LAUNCHER_VARIABLES = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_RUN_ID",
    "CALDERA_ELASTIC_ROUND",
)


@pytest.fixture(autouse=True)
def _no_launcher_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
