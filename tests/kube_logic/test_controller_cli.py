"""`caldera controller` refuses a kubeconfig it cannot use with one line naming the file, exit code 2."""

from __future__ import annotations

from pathlib import Path

from caldera.testing.clirun import caldera


def test_a_missing_kubeconfig_is_one_line_naming_the_file(tmp_path: Path) -> None:
    result = caldera("controller", "--kubeconfig", tmp_path / "nope")
    assert result.code == 2
    assert (
        result.stderr.strip()
        == f"caldera: error: {tmp_path / 'nope'}: cannot read the kubeconfig: No such file or directory"
    )


def test_a_kubeconfig_that_is_not_yaml_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "config").write_text("clusters: [\n")
    result = caldera("controller", "--kubeconfig", tmp_path / "config")
    assert result.code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "not YAML" in result.stderr
    assert "Traceback" not in result.stderr
