"""Elastic training: time from a fault (or a scale request) to training resumed, on the embedded
cluster and with the launcher on its own (medians of several runs; goal < 3 s on the cluster, and
the lease TTL + 1 s for the launcher alone).

**On the embedded cluster** (`--only cluster`): one elastic job (examples/elastic-ddp, 3 workers,
long enough for every fault) runs on a daemon started by `caldera up` (which starts its own
etcd). Then, one after another:

- `kill -9` of a worker pod's training process (the pod's launcher lives and re-forms);
- `kill -9` of a whole worker pod (its process group: the controller re-creates the pod);
- `caldera scale` 3 → 2 and 2 → 3 (the whole command is inside the figure; its own time, a CLI
  process and the daemon's answer, is printed beside it);
- `kill -9` of a training process again 1 s after training resumed ("back to back").

Each fault but the last comes `--steady` seconds (12) after training resumed, as faults do in a
long run. The back-to-back fault comes 1 s after the scale-out resumed: only the warm spares
started behind that round can serve it.

**The launcher alone** (`--only launcher`): an etcd on loopback and three `caldera launch --np
2:3 --ttl 5` processes, as on three hosts with no daemon, training the same example. `kill -9`
of one launcher (its workers die with it) with nobody announcing a replacement: time until the
two survivors train at world 2 (the dead launcher's keys go when its lease expires, so the goal
is the TTL + 1 s). Then a new launcher joins: time until the three train at world 3.

"Resumed" is the first training step of the new round on every rank, as the example logs it
(`step world=N ... restart=R ... time=T`, T in Unix seconds); the fault's time is taken just
before the kill or the command. Timestamps of different processes on one machine share a clock.

**Memory** (`--only memory`): RSS and PSS of a zygote that imported the default preload modules, of
three spares it forked, and of one spare that imported them itself (launcher/zygote.py).

    python benchmarks/elastic_recovery.py [--repeat 3] [--only cluster|launcher|memory] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from caldera.client import connect
from caldera.launcher.server import EtcdServer

CALDERA = [sys.executable, "-m", "caldera.cli.main"]
REPO = Path(__file__).resolve().parents[1]
LAUNCH_START = re.compile(r"^caldera-launch .* pids=(\d+) start$", re.MULTILINE)
STEP = re.compile(r"^step world=(\d+) rank=(\d+) restart=(\d+) .*time=([\d.]+)$", re.MULTILINE)
TTL = 5
TRAIN = ["python", "examples/elastic-ddp/train.py", "--epochs", "1000", "--step-delay", "0.05"]


def caldera(home: Path, *args: str) -> str:
    env = {**os.environ, "CALDERA_HOME": str(home)}
    done = subprocess.run([*CALDERA, *args], env=env, cwd=REPO, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"caldera {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def steps(logs: list[Path]) -> list[tuple[int, int, float]]:
    """(world, restart, time) of every first-step line in these logs."""
    found = []
    for log in logs:
        text = log.read_text(errors="replace") if log.exists() else ""
        found += [(int(w), int(r), float(t)) for w, _, r, t in STEP.findall(text)]
    return found


def resumed_after(logs: Callable[[], list[Path]], since: float, world: int, timeout: float = 300.0) -> float:
    """Seconds from `since` to the first step at `world` logged after it (every rank of that round)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        after = [t for w, _, t in steps(logs()) if t > since and w == world]
        if len(after) >= world:
            return max(sorted(after)[:world]) - since  # training resumed when all ranks stepped
        time.sleep(0.05)
    raise SystemExit(f"no step at world {world} within {timeout:g}s of the fault")


def last_trainer(log: Path) -> int:
    """The worker the launcher's last `start` line names."""
    return int(LAUNCH_START.findall(log.read_text(errors="replace"))[-1])


def report(timings: dict[str, list[float]]) -> None:
    for what, values in timings.items():
        print(f"elastic {what} → training resumed: median {statistics.median(values):.2f} s "
              f"(min {min(values):.2f}, max {max(values):.2f}, {len(values)} runs)")  # fmt: skip


# ---------------------------------------------------------------- on the embedded cluster


def cluster(repeat: int, steady: float, tmp: Path) -> None:
    timings: dict[str, list[float]] = {
        "trainer killed": [],
        "pod killed": [],
        "scale 3 → 2": [],
        "scale 2 → 3": [],
        "trainer killed back to back": [],
    }
    commands: dict[str, list[float]] = {"scale 3 → 2": [], "scale 2 → 3": []}  # the `caldera scale` process alone
    home = tmp / "home"
    tmp.mkdir(parents=True)

    def logs() -> list[Path]:
        return list((home / "pods" / "default").glob("el-*/log"))

    def pids(pod: str) -> tuple[int, int]:
        """(launcher, trainer) of a pod: the shim's child, and the worker its last `start` line names."""
        pod_dir = home / "pods" / "default" / pod
        shim = int(json.loads((pod_dir / "proc.json").read_text())["pid"])
        (launcher,) = [int(c) for c in Path(f"/proc/{shim}/task/{shim}/children").read_text().split()]
        return launcher, last_trainer(pod_dir / "log")

    print(caldera(home, "up"), flush=True)
    try:
        caldera(
            home, "submit", "pytorch", "--name", "el", "--elastic", "--workers", "2:3", "--cpu", "300m", "--",
            *TRAIN, "--checkpoint", str(tmp / "ckpt"),
        )  # fmt: skip
        resumed_after(logs, 0.0, 3, timeout=900.0)  # the first start compiles torch
        for i in range(repeat):
            time.sleep(steady)
            _, trainer = pids("el-worker-1")
            t0 = time.time()
            os.kill(trainer, signal.SIGKILL)
            timings["trainer killed"].append(resumed_after(logs, t0, 3))

            time.sleep(steady)
            launcher, _ = pids("el-worker-2")
            t0 = time.time()
            os.killpg(os.getpgid(launcher), signal.SIGKILL)
            timings["pod killed"].append(resumed_after(logs, t0, 3))

            for before, after in ((3, 2), (2, 3)):
                time.sleep(steady)
                t0 = time.time()
                caldera(home, "scale", "el", "--replicas", str(after))
                commands[f"scale {before} → {after}"].append(time.time() - t0)
                timings[f"scale {before} → {after}"].append(resumed_after(logs, t0, after))

            time.sleep(1.0)
            _, trainer = pids("el-worker-0")
            t0 = time.time()
            os.kill(trainer, signal.SIGKILL)
            timings["trainer killed back to back"].append(resumed_after(logs, t0, 3))
            print(f"  run {i + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in timings.items()), flush=True)
        with connect(home) as client:
            retries = client.get_job("default", "el")["retryCount"]
    finally:
        caldera(home, "down")
    report(timings)
    for what, values in commands.items():
        print(f"  of which the `caldera {what}` command itself: median {statistics.median(values):.2f} s")
    print(f"job retryCount after {repeat * 3} faults: {retries}")


# ---------------------------------------------------------------- the launcher alone


def launcher_alone(repeat: int, steady: float, tmp: Path) -> None:
    timings: dict[str, list[float]] = {
        f"launcher alone: one of 3 killed, none announced (TTL {TTL} s)": [],
        "launcher alone: a launcher joins 2": [],
    }
    procs: dict[str, subprocess.Popen[bytes]] = {}
    tmp.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CALDERA_ELASTIC_", "PADDLE_ELASTIC_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # `python` is this one, as in a pod

    def start(host: str, endpoint: str) -> None:
        argv = [
            *CALDERA, "launch", "--elastic-server", endpoint, "--job-id", "bench", "--np", "2:3",
            "--ttl", str(TTL), "--", *TRAIN, "--checkpoint", str(tmp / "ckpt"),
        ]  # fmt: skip
        with (tmp / f"{host}.log").open("ab") as out:
            procs[host] = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=out, stdin=subprocess.DEVNULL)

    def logs() -> list[Path]:
        return list(tmp.glob("host-*.log"))

    with EtcdServer(tmp / "etcd") as etcd:
        try:
            for n in range(3):
                start(f"host-{n}", etcd.endpoint)
            resumed_after(logs, 0.0, 3, timeout=900.0)  # the first start compiles torch
            for i in range(repeat):
                time.sleep(steady)
                victim = f"host-{i}"
                t0 = time.time()
                procs.pop(victim).kill()  # SIGKILL: its workers die with it (PDEATHSIG)
                timings[f"launcher alone: one of 3 killed, none announced (TTL {TTL} s)"].append(
                    resumed_after(logs, t0, 2)
                )
                time.sleep(steady)
                t0 = time.time()
                start(f"host-{i + 3}", etcd.endpoint)
                timings["launcher alone: a launcher joins 2"].append(resumed_after(logs, t0, 3))
                print(f"  run {i + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in timings.items()), flush=True)
        finally:
            for proc in procs.values():
                proc.send_signal(signal.SIGTERM)
            for proc in procs.values():
                proc.wait()
    report(timings)


# ---------------------------------------------------------------- memory of the spares


def memory(tmp: Path) -> None:
    """RSS and PSS of a zygote with the default preload, three spares it forked and one cold spare (/proc smaps_rollup)."""
    from caldera.launcher.spares import DEFAULT_PRELOAD, SparePool, spare_env

    def rollup(pid: int) -> str:
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:])
        rss, pss = (int(fields[k].split()[0]) // 1024 for k in ("Rss", "Pss"))
        return f"RSS {rss} MiB, PSS {pss} MiB"

    def cpu(pid: int) -> float:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")

    tmp.mkdir(parents=True)
    idle = tmp / "idle.py"
    idle.write_text("import select\nselect.select([], [], [])\n")
    env = spare_env({k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ})
    forked = SparePool([sys.executable, str(idle)], env, list(DEFAULT_PRELOAD), 3, zygote=True)
    cold = SparePool([sys.executable, str(idle)], env, list(DEFAULT_PRELOAD), 1)
    try:
        forked.fill()
        spares = [p.pid for p in forked._ready]  # each waits for the zygote's import, then its fork
        assert forked.zygote is not None and forked.zygote._owned is not None
        zygote = forked.zygote._owned.pid
        print(f"zygote: {rollup(zygote)}, import CPU {cpu(zygote):.2f} s")
        for pid in spares:
            print(f"forked spare: {rollup(pid)}, CPU {cpu(pid):.3f} s")
        cold.fill()
        (spare,) = cold._ready
        before = -1.0
        while cpu(spare.pid) != before:  # its import is done when its CPU time stops growing
            before = cpu(spare.pid)
            time.sleep(1.0)
        print(f"cold spare: {rollup(spare.pid)}, import CPU {cpu(spare.pid):.2f} s")
    finally:
        forked.close()
        cold.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steady", type=float, default=12.0, help="seconds of training before each fault")
    parser.add_argument("--only", choices=["cluster", "launcher", "memory"], help="run one of the parts")
    parser.add_argument("--keep", type=Path, help="work in this new directory and keep it (pod and launcher logs)")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True)
    work: contextlib.AbstractContextManager[str] = (
        contextlib.nullcontext(str(args.keep)) if args.keep else tempfile.TemporaryDirectory(prefix="caldera-bench-")
    )
    with work as tmp:
        if args.only in (None, "cluster"):
            cluster(args.repeat, args.steady, Path(tmp) / "cluster")
        if args.only in (None, "launcher"):
            launcher_alone(args.repeat, args.steady, Path(tmp) / "launcher")
        if args.only in (None, "memory"):
            memory(Path(tmp) / "memory")


if __name__ == "__main__":
    main()
