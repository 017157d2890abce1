"""Elastic training on the embedded cluster: time from a worker's death to training resumed, and from a
scale request to training at the new size (medians of several runs; goal < 5 s for both).

One elastic job (examples/elastic-ddp, 3 workers, long enough for every fault) runs on a
daemon started by `caldera up` (which starts its own etcd). Then, one after another:

- `kill -9` of a worker pod's training process (the pod's launcher lives and re-forms);
- `kill -9` of a whole worker pod (its process group: the controller re-creates the pod);
- `caldera scale` 3 → 2 and 2 → 3;
- `kill -9` of a training process again 1 s after a restart ("back to back").

Each fault but the last comes `--steady` seconds (12) after training resumed, as faults
do in a long run: by then the launchers' warm spares for the next round are ready
(they start 5 s into a round). The back-to-back fault finds none and restarts cold:
that is the number without spares.

"Resumed" is the first training step of the new round, as the example logs it
(`step world=N ... restart=R ... time=T`, T in Unix seconds); the fault's time is taken
just before the kill or the scale command. Timestamps of different processes on one
machine share a clock.

    python benchmarks/elastic_recovery.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from caldera.client import connect

CALDERA = [sys.executable, "-m", "caldera.cli.main"]
REPO = Path(__file__).resolve().parents[1]
LAUNCH_START = re.compile(r"^caldera-launch .* pids=(\d+) start$", re.MULTILINE)
STEP = re.compile(r"^step world=(\d+) rank=(\d+) restart=(\d+) .*time=([\d.]+)$", re.MULTILINE)


def caldera(home: Path, *args: str) -> str:
    env = {**os.environ, "CALDERA_HOME": str(home)}
    done = subprocess.run([*CALDERA, *args], env=env, cwd=REPO, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"caldera {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def steps(home: Path, job: str) -> list[tuple[int, int, float]]:
    """(world, restart, time) of every first-step line in the job's pod logs."""
    found = []
    for log in (home / "pods" / "default").glob(f"{job}-*/log"):
        text = log.read_text(errors="replace")
        found += [(int(w), int(r), float(t)) for w, _, r, t in STEP.findall(text)]
    return found


def resumed_after(home: Path, job: str, since: float, world: int, timeout: float = 120.0) -> float:
    """Seconds from `since` to the first step at `world` logged after it (every rank of that round)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        after = [t for w, _, t in steps(home, job) if t > since and w == world]
        if len(after) >= world:
            return max(sorted(after)[:world]) - since  # training resumed when all ranks stepped
        time.sleep(0.05)
    raise SystemExit(f"job {job}: no step at world {world} within {timeout:g}s of the fault")


def pids(home: Path, pod: str) -> tuple[int, int]:
    """(launcher, trainer) of a pod: the shim's child, and the worker its last `start` line names."""
    pod_dir = home / "pods" / "default" / pod
    shim = int(json.loads((pod_dir / "proc.json").read_text())["pid"])
    (launcher,) = [int(c) for c in Path(f"/proc/{shim}/task/{shim}/children").read_text().split()]
    starts = LAUNCH_START.findall((pod_dir / "log").read_text(errors="replace"))
    return launcher, int(starts[-1])


def settle(home: Path, job: str, world: int) -> None:
    """Wait until the current round trains at `world` (its first steps logged), then a little more."""
    resumed_after(home, job, 0.0, world)
    time.sleep(1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steady", type=float, default=12.0, help="seconds of training before each fault")
    args = parser.parse_args()
    timings: dict[str, list[float]] = {
        "trainer killed": [],
        "pod killed": [],
        "scale 3 → 2": [],
        "scale 2 → 3": [],
        "trainer killed back to back (cold)": [],
    }
    with tempfile.TemporaryDirectory(prefix="caldera-bench-elastic-") as tmp:
        home = Path(tmp) / "home"
        print(caldera(home, "up"), flush=True)
        try:
            caldera(
                home, "submit", "pytorch", "--name", "el", "--elastic", "--workers", "2:3", "--cpu", "300m", "--",
                "python", "examples/elastic-ddp/train.py", "--epochs", "1000", "--step-delay", "0.05",
                "--checkpoint", str(Path(tmp) / "ckpt"),
            )  # fmt: skip
            settle(home, "el", 3)
            for i in range(args.repeat):
                time.sleep(args.steady)
                _, trainer = pids(home, "el-worker-1")
                t0 = time.time()
                os.kill(trainer, signal.SIGKILL)
                timings["trainer killed"].append(resumed_after(home, "el", t0, 3))

                time.sleep(args.steady)
                launcher, _ = pids(home, "el-worker-2")
                t0 = time.time()
                os.killpg(os.getpgid(launcher), signal.SIGKILL)
                timings["pod killed"].append(resumed_after(home, "el", t0, 3))

                time.sleep(args.steady)
                t0 = time.time()
                caldera(home, "scale", "el", "--replicas", "2")
                timings["scale 3 → 2"].append(resumed_after(home, "el", t0, 2))
                time.sleep(args.steady)
                t0 = time.time()
                caldera(home, "scale", "el", "--replicas", "3")
                timings["scale 2 → 3"].append(resumed_after(home, "el", t0, 3))

                time.sleep(1.0)
                _, trainer = pids(home, "el-worker-0")
                t0 = time.time()
                os.kill(trainer, signal.SIGKILL)
                timings["trainer killed back to back (cold)"].append(resumed_after(home, "el", t0, 3))
                print(f"  run {i + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in timings.items()), flush=True)
            with connect(home) as client:
                retries = client.get_job("default", "el")["retryCount"]
        finally:
            caldera(home, "down")
    for what, values in timings.items():
        print(f"elastic {what} → training resumed: median {statistics.median(values):.2f} s "
              f"(min {min(values):.2f}, max {max(values):.2f}, {len(values)} runs)")  # fmt: skip
    print(f"job retryCount after {args.repeat * 3} faults: {retries}")


if __name__ == "__main__":
    main()
