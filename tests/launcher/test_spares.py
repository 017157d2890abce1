"""Warm spares: which commands can be run by a spare, and a spare runs the program as `python` would."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from caldera.launcher.settings import SettingsError, parse
from caldera.launcher.spares import SparePool, warm_form
from caldera.testing.waiting import wait_until

PY = sys.executable


@pytest.mark.parametrize(
    ("command", "form"),
    [
        (["python", "train.py", "--epochs", "3"], ("python", "", ["train.py", "--epochs", "3"])),
        (["python3", "-u", "train.py"], ("python3", "", ["train.py"])),
        (["python", "-m", "pkg.train", "-x"], ("python", "pkg.train", ["pkg.train", "-x"])),
        (["python", "-c", "print(1)"], None),
        (["python"], None),
        (["bash", "run.sh"], None),
        (["mpirun", "-n", "2", "python", "t.py"], None),
    ],
)
def test_only_python_scripts_and_modules_have_a_warm_form(command: list[str], form: object) -> None:
    assert warm_form(command) == form


SCRIPT = """\
import json, os, sys
seen = {"argv": sys.argv, "name": __name__, "path0": sys.path[0], "rank": os.environ.get("RANK"),
        "old": os.environ.get("ONLY_BEFORE"), "preloaded": "colorsys" in sys.modules, "stdin": sys.stdin.read()}
with open(sys.argv[2], "w") as f:
    json.dump(seen, f)
sys.exit(int(sys.argv[1]))
"""


def test_a_spare_becomes_the_worker_with_the_round_s_environment(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out.json"
    env = {"PATH": os.environ["PATH"], "ONLY_BEFORE": "1"}
    pool = SparePool([PY, str(script), "3", str(out)], env, ["colorsys"], size=1)
    try:
        pool.fill()
        proc = pool.start({"PATH": os.environ["PATH"], "RANK": "2"})
        assert proc is not None
        assert proc.wait(timeout=30) == 3  # the script's exit code
        assert pool.start({}) is None  # the one spare is taken: the next worker would start cold
        pool.refill_later(0.05)  # behind the round: a new spare for the next one
        wait_until(lambda: pool.waiting() == 1, timeout=30, what="a new spare")
    finally:
        pool.close()
    assert pool.waiting() == 0
    seen = json.loads(out.read_text())
    assert seen == {
        "argv": [str(script), "3", str(out)],
        "name": "__main__",
        "path0": str(tmp_path),  # the script's directory, as `python prog.py` puts it
        "rank": "2",
        "old": None,  # the environment is the round's, not the one the spare started with
        "preloaded": True,
        "stdin": "",
    }


def test_preload_none_turns_spares_off() -> None:
    base = ["--elastic-server", "127.0.0.1:2379", "--job-id", "j", "--np", "2"]
    assert parse([*base, "--preload", "none", "--", "python", "t.py"]).preload == ()
    assert parse([*base, "--", "python", "t.py"]).preload[0] == "torch"
    assert parse([*base, "--preload", "torch,numpy", "--", "python", "t.py"]).preload == ("torch", "numpy")
    with pytest.raises(SettingsError, match="--preload"):
        parse([*base, "--preload", "a b", "--", "python", "t.py"])
    assert SparePool(["python", "t.py"], {}, [], size=1).form is None
