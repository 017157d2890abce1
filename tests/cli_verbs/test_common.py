"""The helpers the verbs share: durations, timestamps, rank order, and how the cluster is found."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from caldera.cli.common import human_duration, ordered_pods, timestamp
from caldera.cli.list import list_jobs
from caldera.cli.main import VERBS, cli


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "-"),
        (-5, "0s"),
        (42, "42s"),
        (60, "1m"),
        (303, "5m3s"),
        (3600, "1h"),
        (7800, "2h10m"),
        (86400 * 3 + 3600 * 4 + 5, "3d4h"),
        (86400 * 2, "2d"),
    ],
)
def test_human_duration(seconds: float | None, text: str) -> None:
    assert human_duration(seconds) == text


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        ("", None),
        (12.5, 12.5),
        ("12.5", 12.5),
        ("1970-01-01T00:01:00Z", 60.0),
        ("1970-01-01T00:01:00+00:00", 60.0),
        ("yesterday", None),
    ],
)
def test_timestamp(value: object, seconds: float | None) -> None:
    assert timestamp(value) == seconds


def test_ordered_pods_by_spec_then_index() -> None:
    pods = [
        {"name": "j-worker-10", "task": "worker", "index": 10},
        {"name": "j-worker-2", "task": "worker", "index": 2},
        {"name": "j-ps-0", "task": "ps", "index": 0},
        {"name": "j-chief-0", "task": "chief", "index": 0},
    ]
    ranked = [p["name"] for p in ordered_pods({"pods": pods}, ["chief", "worker"])]
    assert ranked == ["j-chief-0", "j-worker-2", "j-worker-10", "j-ps-0"]  # tasks unknown to the spec come last
    assert ordered_pods({"pods": pods})[0]["name"] == "j-worker-2"  # without a spec: tasks in the order first seen


def test_without_a_daemon_a_verb_says_how_to_start_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALDERA_HOME", str(tmp_path))
    r = CliRunner().invoke(list_jobs, [])
    assert r.exit_code == 2
    assert r.stderr == "caldera: error: the caldera daemon is not running: start it with `caldera up`\n"


def test_a_verb_imports_only_what_it_needs() -> None:
    """`caldera list` does not import the simulator, the scheduler or the other verbs (each verb's module is
    imported when it runs); `caldera --help` lists every verb."""
    probe = """
import sys
from caldera.cli.main import cli
try:
    cli.main(["list", "--help"], standalone_mode=False)
except SystemExit:
    pass
print(",".join(sorted(m for m in sys.modules if m.startswith("caldera."))))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    loaded = set(out.strip().splitlines()[-1].split(","))
    assert "caldera.cli.list" in loaded
    for heavy in ("caldera.sim", "caldera.scheduler", "caldera.cli.simulate", "caldera.cli.controller"):
        assert not any(m == heavy or m.startswith(f"{heavy}.") for m in loaded), heavy
    listing = subprocess.run(
        [sys.executable, "-m", "caldera.cli.main", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for verb in ("apply", "controller", "list", "simulate", "submit", "up"):
        assert f"\n  {verb} " in listing


def test_help_lists_every_verb_with_its_own_help_without_importing_them() -> None:
    """`caldera --help` writes VERBS' one-line help, which must be each command's own, and imports no verb."""
    probe = """
import sys
from caldera.cli.main import cli
try:
    cli.main(["--help"], standalone_mode=False)
except SystemExit:
    pass
print(",".join(sorted(m for m in sys.modules if m.startswith("caldera.cli."))))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "caldera.cli.main"
    assert "\n  scale          Set the replicas of a task of JOB;" in out
    ctx = click.Context(cli)
    for verb, (_, _, summary) in VERBS.items():
        command = cli.get_command(ctx, verb)
        assert command is not None
        assert summary == command.get_short_help_str(limit=10_000), verb
