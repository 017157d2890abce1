"""Admission's PATH lookup, remembered between submissions: a command found before is checked where it was,
and one gone from there is looked up again (so a removed command is refused, a moved one found)."""

from __future__ import annotations

import os
from pathlib import Path

from caldera.system.admission import on_path


def executable(where: Path, name: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_command_is_found_then_refused_once_removed_then_found_where_it_moved(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    path = os.pathsep.join([str(first), str(second)])
    tool = executable(first, "caldera-test-tool")
    assert on_path("caldera-test-tool", path)
    assert on_path("caldera-test-tool", path)  # the remembered place
    tool.unlink()
    assert not on_path("caldera-test-tool", path)
    executable(second, "caldera-test-tool")
    assert on_path("caldera-test-tool", path)


def test_a_file_that_is_not_executable_is_not_a_command(tmp_path: Path) -> None:
    tool = executable(tmp_path, "caldera-test-plain")
    assert on_path("caldera-test-plain", str(tmp_path))
    tool.chmod(0o644)
    assert not on_path("caldera-test-plain", str(tmp_path))
