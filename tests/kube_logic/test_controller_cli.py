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


def test_a_wrong_policy_is_refused_before_anything_connects(tmp_path: Path) -> None:
    result = caldera("controller", "--kubeconfig", tmp_path / "nope", "--policy", "srtf-gpu")
    assert result.code == 2
    assert result.stderr.strip() == (
        "caldera: error: --policy: srtf-gpu is the simulator's yardstick: it reads each job's run time, unknown here"
    )


def test_a_scheduler_config_naming_an_unknown_plugin_is_one_line(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text('actions: "allocate"\ntiers:\n- plugins:\n  - name: nosuch\n')
    result = caldera("controller", "--kubeconfig", tmp_path / "nope", "--scheduler-config", conf)
    assert result.code == 2
    assert result.stderr.startswith(f"caldera: error: {conf}: tiers[0].plugins[0].name: unknown plugin 'nosuch'")
