"""Which shim a pod runs (backends/spawn.py shim_command): the C shim only when built from this shim.c."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from caldera.backends import shim, spawn


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    binary, digest = tmp_path / "caldera-shim", tmp_path / "caldera-shim.sha256"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setattr(spawn, "NATIVE_SHIM", binary)
    monkeypatch.setattr(spawn, "NATIVE_SHIM_SOURCE", digest)
    monkeypatch.delenv(spawn.SHIM_VAR, raising=False)
    return binary, digest


def source_digest() -> str:
    return hashlib.sha256(Path(shim.__file__).with_suffix(".c").read_bytes()).hexdigest()


def test_the_c_shim_built_from_this_source_is_used_whatever_the_time_stamps(built: tuple[Path, Path]) -> None:
    binary, digest = built
    digest.write_text(source_digest() + "\n")  # a fresh clone's shim.c is newer than the binary: same content
    assert spawn.shim_command() == [str(binary)]


@pytest.mark.parametrize("recorded", ["0" * 64, None], ids=["another source", "no record"])
def test_a_c_shim_of_another_or_unknown_source_is_not_used(built: tuple[Path, Path], recorded: str | None) -> None:
    _, digest = built
    if recorded is not None:
        digest.write_text(recorded)
    assert spawn.shim_command()[-1] == shim.__file__


def test_asking_for_the_python_shim_wins(built: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    _, digest = built
    digest.write_text(source_digest())
    monkeypatch.setenv(spawn.SHIM_VAR, "python")
    assert spawn.shim_command()[-1] == shim.__file__
