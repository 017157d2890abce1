"""Zygotes: spares forked from one process that imported the preload modules once, per launcher or per node."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from caldera.launcher.spares import SparePool
from caldera.launcher.zygote import STARTER_VAR, Forked
from caldera.launcher.zygotestarter import ZygoteStarter
from caldera.testing.waiting import wait_until

from .launchers import alive

PY = sys.executable
# A module whose every import leaves a line: how many times it was imported, and by which process.
COUNTED = "import os\nwith open(os.path.join(os.path.dirname(__file__), 'imports'), 'a') as f:\n    f.write(f'{os.getpid()}\\n')\n"
SCRIPT = """\
import json, os, sys
seen = {"preloaded": "counted" in sys.modules, "rank": os.environ.get("RANK"), "cwd": os.getcwd(),
        "path0": sys.path[0], "argv": sys.argv, "name": __name__}
with open(sys.argv[1], "w") as f:
    json.dump(seen, f)
print("worker", os.environ.get("RANK"), "done", flush=True)
sys.exit(int(os.environ.get("CODE", "0")))
"""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "counted.py").write_text(COUNTED)
    (tmp_path / "prog.py").write_text(SCRIPT)
    return tmp_path


def pool_env(work: Path, **more: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "PYTHONPATH": str(work), **more}


def imports(work: Path) -> list[int]:
    path = work / "imports"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


@pytest.fixture
def starter() -> Iterator[ZygoteStarter]:
    started = ZygoteStarter(f"caldera-test-starter-{os.getpid()}")
    try:
        yield started
    finally:
        zygotes = started.zygotes()
        started.close()
        assert not any(alive(pid) for pid in zygotes)


def test_refills_are_forked_from_one_import_and_run_the_script_as_python_would(work: Path) -> None:
    pool = SparePool([PY, str(work / "prog.py"), str(work / "r0.json")], pool_env(work), ["counted"], 1, zygote=True)
    try:
        pool.fill()
        for rank, code in ((0, 3), (1, 0), (2, 0)):  # three rounds, each with the spare refilled behind the last
            (work / "r0.json").unlink(missing_ok=True)
            proc = pool.start({**pool_env(work), "RANK": str(rank), "CODE": str(code)})
            assert isinstance(proc, Forked)
            assert proc.wait(timeout=60) == code  # the script's exit code, through the zygote
            pool.refill()
            seen = json.loads((work / "r0.json").read_text())
            assert seen == {
                "preloaded": True,
                "rank": str(rank),
                "cwd": os.getcwd(),  # the launcher's working directory, as a cold worker's
                "path0": str(work),  # the script's directory, as `python prog.py` puts it
                "argv": [str(work / "prog.py"), str(work / "r0.json")],
                "name": "__main__",
            }
        assert len(imports(work)) == 1  # the zygote's import: no spare imported again
    finally:
        pool.close()


def test_a_worker_killed_by_a_signal_reports_it_as_popen_would(work: Path) -> None:
    script = work / "hang.py"
    script.write_text("import select\nselect.select([], [], [])\n")
    pool = SparePool([PY, str(script)], pool_env(work), ["counted"], 1, zygote=True)
    try:
        pool.fill()
        proc = pool.start(pool_env(work))
        assert proc is not None and proc.pid > 0  # known once the zygote forked it
        assert proc.poll() is None
        os.killpg(proc.pid, signal.SIGTERM)  # a worker leads its own group, as WorkerGroup.stop expects
        assert proc.wait(timeout=30) == -signal.SIGTERM
    finally:
        pool.close()


LAUNCHER = """\
import os, select, sys
from caldera.launcher.spares import SparePool
pool = SparePool([sys.executable, sys.argv[1]], dict(os.environ), ["counted"], 1, zygote=True)
pool.fill()
worker = pool.start(dict(os.environ))
print(worker.pid, flush=True)
select.select([], [], [])
"""


@pytest.mark.parametrize("shared", [False, True], ids=["own-zygote", "node-zygote"])
def test_a_forked_worker_dies_with_its_launcher(work: Path, starter: ZygoteStarter, shared: bool) -> None:
    """As PR_SET_PDEATHSIG does for a cold worker: the zygote kills the worker when its launcher's end closes."""
    script = work / "hang.py"
    script.write_text("import select\nselect.select([], [], [])\n")
    env = {**os.environ, **pool_env(work)}
    if shared:
        env[STARTER_VAR] = starter.name
    launcher = subprocess.Popen([PY, "-c", LAUNCHER, str(script)], env=env, stdout=subprocess.PIPE)
    try:
        assert launcher.stdout is not None
        worker = int(launcher.stdout.readline())
        assert worker > 0 and alive(worker)
        launcher.kill()
        launcher.wait()
        wait_until(lambda: not alive(worker), 30, "the worker to die with its launcher")
        assert bool(starter.zygotes()) == shared  # the node's zygote stays for the node's other pods
    finally:
        if launcher.poll() is None:
            launcher.kill()
        launcher.wait()
        if launcher.stdout is not None:
            launcher.stdout.close()


def test_launchers_of_one_node_share_its_zygote_which_outlives_them(work: Path, starter: ZygoteStarter) -> None:
    """The pod-killed and scale-out case: a new pod's launcher forks its spares from the node's zygote."""
    env = pool_env(work, **{STARTER_VAR: starter.name})
    pods = []
    for pod in ("a", "b"):
        out = work / f"{pod}.json"
        pool = SparePool([PY, str(work / "prog.py"), str(out)], {**env, "POD": pod}, ["counted"], 1, zygote=True)
        pool.fill()
        proc = pool.start({**env, "RANK": pod})
        assert proc is not None and proc.wait(timeout=60) == 0
        assert json.loads(out.read_text())["rank"] == pod
        pool.close()  # the pod is gone; the node's zygote is not
        pods.append(pool)
    (zygote,) = starter.zygotes()
    assert imports(work) == [zygote]  # one import on the node, by the zygote, for both pods
    environ = Path(f"/proc/{zygote}/environ").read_bytes().split(b"\0")
    assert not any(v.startswith(b"POD=") for v in environ)  # none of a pod's own variables
    assert f"{STARTER_VAR}={starter.name}".encode() in environ  # the starter's mark, how `close` finds it


def test_without_a_reachable_zygote_spares_start_cold(work: Path) -> None:
    env = pool_env(work, **{STARTER_VAR: "caldera-test-no-such-starter"})
    pool = SparePool([PY, str(work / "prog.py"), str(work / "r.json")], env, ["counted"], 1, zygote=True)
    assert pool.zygote is not None and not pool.zygote.shared  # the launcher runs its own
    pool.zygote.close()  # ... and it is gone: the pool falls back to spares that import
    try:
        pool.fill()
        proc = pool.start({**env, "RANK": "0"})
        assert proc is not None and not isinstance(proc, Forked)
        assert proc.wait(timeout=60) == 0
        assert len(imports(work)) == 1 and imports(work)[0] == proc.pid  # it imported itself
    finally:
        pool.close()


GLOO = """\
import json, os, sys, tempfile, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="file://" + sys.argv[2], rank=0, world_size=1)
t = torch.ones(3) * 2
dist.all_reduce(t)
with open(sys.argv[1], "w") as f:
    json.dump({"sum": t.sum().item(), "threads": torch.get_num_threads()}, f)
dist.destroy_process_group()
"""


def test_torch_in_a_forked_worker_runs_gloo_and_the_zygote_forks_from_one_thread(work: Path) -> None:
    """fork keeps only the calling thread: the zygote has no other (torch started none at import, with the spares'
    OMP_NUM_THREADS=1), and a worker forked from it initializes gloo and all-reduces."""
    pytest.importorskip("torch")
    (work / "gloo.py").write_text(GLOO)
    out, store = work / "gloo.json", work / "store"
    env = {"PATH": os.environ["PATH"], "OMP_NUM_THREADS": "1"}
    pool = SparePool(
        [PY, str(work / "gloo.py"), str(out), str(store)], env, ["torch", "torch.distributed"], 1, zygote=True
    )
    try:
        pool.fill()
        assert pool.zygote is not None and pool.zygote._owned is not None
        proc = pool.start(env)
        assert isinstance(proc, Forked)
        assert proc.wait(timeout=300) == 0
        assert json.loads(out.read_text()) == {"sum": 6.0, "threads": 1}
        pool.refill()
        assert pool.waiting() == 1
        zygote = pool.zygote._owned.pid  # the shim exec'd the zygote: same process
        assert len(list(Path(f"/proc/{zygote}/task").iterdir())) == 1
    finally:
        pool.close()


def test_a_starter_stops_its_zygotes_and_those_an_earlier_one_left(work: Path) -> None:
    """The runtime stops the node's zygote when no elastic pod runs, and at its stop also the one that a daemon
    killed before it left running (a later daemon on the same home serves the same name)."""
    name = f"caldera-test-restarted-{os.getpid()}"
    env = pool_env(work, **{STARTER_VAR: name})
    first = ZygoteStarter(name)
    pool = SparePool([PY, str(work / "prog.py"), str(work / "r.json")], env, ["counted"], 1, zygote=True)
    pool.fill()
    pool.close()
    (zygote,) = first.zygotes()
    first.stop_zygotes()  # no elastic pod left on the node
    assert not alive(zygote) and first.zygotes() == []
    pool = SparePool([PY, str(work / "prog.py"), str(work / "r.json")], env, ["counted"], 1, zygote=True)
    pool.fill()  # a new pod: the starter still serves, and starts a zygote again
    (zygote,) = first.zygotes()
    first.close(stop_zygotes=False)  # the daemon went away without stopping its pods
    later = ZygoteStarter(name)
    try:
        assert alive(zygote) and later.zygotes() == []
    finally:
        pool.close()
        later.close()  # stops the pods' zygotes, whoever started them
    wait_until(lambda: not alive(zygote), 30, "the earlier starter's zygote to be killed")
    first.stop_zygotes()  # reaps it (this test process is its parent, as the daemon that went away was)
