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
        pool.refill()  # behind the round: a new spare for the next one
        assert pool.waiting() == 1
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


def policies(pid: int) -> dict[int, int]:
    """The scheduling policy of each thread of `pid` by thread id (field 41 of /proc/PID/task/TID/stat)."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        found[int(task.name)] = int(stat[stat.rindex(")") + 2 :].split()[38])
    return found


def group_nice(pid: int) -> int | None:
    """The nice value of `pid`'s autogroup (its session's CPU weight against other sessions); None without autogroups.

    The file reads "/autogroup-N nice K"; it is missing when the kernel has no autogroups and empty
    when they are built in but off (`kernel.sched_autogroup_enabled = 0`, as on some CI machines).
    """
    try:
        fields = Path(f"/proc/{pid}/autogroup").read_text().split()
    except FileNotFoundError:
        return None
    return int(fields[-1]) if len(fields) == 3 and fields[1] == "nice" else None


AUTOGROUPS = group_nice(os.getpid()) is not None


def loader_policy(pid: int) -> int | None:
    """The policy of the spare's importing thread (its one thread besides the main one)."""
    others = [policy for tid, policy in policies(pid).items() if tid != pid]
    return others[0] if len(others) == 1 else None


SLOW_MODULE = """\
import os, select
while not os.path.exists(os.environ["RELEASE"]):
    select.select([], [], [], 0.02)
"""


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_a_refill_imports_at_idle_priority_and_a_spare_taken_early_is_raised_back(tmp_path: Path) -> None:
    (tmp_path / "slowmod.py").write_text(SLOW_MODULE)  # an import that lasts until the test releases it
    script = tmp_path / "prog.py"
    script.write_text("import sys, slowmod; sys.exit(5)\n")
    release = tmp_path / "release"
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(tmp_path), "RELEASE": str(release)}
    pool = SparePool([PY, str(script)], env, ["slowmod"], size=1, idle_patience=600.0)  # idle until taken
    try:
        pool.refill()
        (spare,) = pool._ready
        wait_until(lambda: loader_policy(spare.pid) == os.SCHED_IDLE, timeout=30, what="an idle import")
        assert policies(spare.pid)[spare.pid] == os.SCHED_OTHER  # the thread that will run the script
        if AUTOGROUPS:  # a session of its own weighs as much as any other session, SCHED_IDLE or not
            wait_until(lambda: group_nice(spare.pid) == 19, timeout=30, what="the spare's session at nice 19")
        proc = pool.start(env)
        assert proc is spare
        if os.geteuid() == 0:  # CAP_SYS_NICE: raised back in place
            wait_until(lambda: loader_policy(spare.pid) == os.SCHED_OTHER, timeout=30, what="the import raised back")
        if AUTOGROUPS:  # a worker's session weighs as any other (nice 0 needs no privilege)
            wait_until(lambda: group_nice(spare.pid) == 0, timeout=30, what="the worker's session at nice 0")
        release.touch()
        assert proc.wait(timeout=30) == 5  # ran the script (in place, or afresh where it may not raise it)
    finally:
        release.touch()
        pool.close()


def age(pid: int) -> float:
    """Seconds since `pid` started (field 22 of /proc/PID/stat, in clock ticks since boot)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    started = int(stat[stat.rindex(")") + 2 :].split()[19]) / os.sysconf("SC_CLK_TCK")
    return float(Path("/proc/uptime").read_text().split()[0]) - started


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_an_idle_import_that_is_not_starved_stays_idle_past_its_patience(tmp_path: Path) -> None:
    """The CPUs it gets are free ones: going on at normal priority would only slow a member that joins meanwhile
    (its workers' import of torch is what the whole round waits for)."""
    (tmp_path / "slowmod.py").write_text(SLOW_MODULE)
    release = tmp_path / "release"
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(tmp_path), "RELEASE": str(release)}
    # starved_share 0: whatever CPU the import gets counts as enough, as a free CPU's share would
    script = tmp_path / "prog.py"
    script.write_text("import sys, slowmod; sys.exit(7)\n")
    pool = SparePool([PY, str(script)], env, ["slowmod"], size=1, idle_patience=0.05, starved_share=0.0)
    try:
        pool.refill()
        (spare,) = pool._ready
        wait_until(lambda: loader_policy(spare.pid) == os.SCHED_IDLE, timeout=30, what="an idle import")
        wait_until(lambda: age(spare.pid) > 2.0, timeout=30, what="forty patiences")
        assert loader_policy(spare.pid) == os.SCHED_IDLE
        if AUTOGROUPS:
            assert group_nice(spare.pid) == 19
    finally:
        release.touch()
        pool.close()


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_a_starved_idle_import_goes_on_at_normal_priority_after_its_patience(tmp_path: Path) -> None:
    """On a node whose CPUs are never idle an idle import would never end: starved for its patience, it stops being
    idle (this import waits on a file, so it gets no CPU: starved)."""
    (tmp_path / "slowmod.py").write_text(SLOW_MODULE)
    script = tmp_path / "prog.py"
    script.write_text("import sys, slowmod; sys.exit(6)\n")
    release = tmp_path / "release"
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(tmp_path), "RELEASE": str(release)}
    pool = SparePool([PY, str(script)], env, ["slowmod"], size=1, idle_patience=0.5)
    try:
        pool.refill()
        (spare,) = pool._ready
        wait_until(lambda: loader_policy(spare.pid) == os.SCHED_IDLE, timeout=30, what="an idle import")
        # raised back in place (CAP_SYS_NICE), or the spare started afresh at normal priority
        wait_until(lambda: loader_policy(spare.pid) == os.SCHED_OTHER, timeout=30, what="a normal-priority import")
        if AUTOGROUPS:
            wait_until(lambda: group_nice(spare.pid) == 0, timeout=30, what="the spare's session at nice 0")
        proc = pool.start(env)
        assert proc is spare
        release.touch()
        assert proc.wait(timeout=30) == 6
    finally:
        release.touch()
        pool.close()


def test_preload_none_turns_spares_off() -> None:
    base = ["--elastic-server", "127.0.0.1:2379", "--job-id", "j", "--np", "2"]
    assert parse([*base, "--preload", "none", "--", "python", "t.py"]).preload == ()
    assert parse([*base, "--", "python", "t.py"]).preload[0] == "torch"
    assert parse([*base, "--preload", "torch,numpy", "--", "python", "t.py"]).preload == ("torch", "numpy")
    with pytest.raises(SettingsError, match="--preload"):
        parse([*base, "--preload", "a b", "--", "python", "t.py"])
    assert SparePool(["python", "t.py"], {}, [], size=1).form is None
