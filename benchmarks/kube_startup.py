"""Where `caldera controller`'s start-up goes: from its process's start to its first pod bound, beside kube-scheduler's.

For each run, a fresh control plane (etcd, kube-apiserver, KWOK; no controller manager) with `--nodes` KWOK
nodes of 32 CPUs (as `kube_schedulers.py`) and `--jobs` single-pod jobs created before the clock starts:
Volcano Jobs on Volcano's CRDs for caldera, plain pods for kube-scheduler (default profile, client QPS raised).
The clock starts just before the contender's process is started and stops when a watch on the pods first
sees one bound. caldera's milestones come from its log (`-v`, millisecond stamps on the same machine's clock):

- started: its modules imported (the CLI's first line);
- leading: it holds the Lease;
- listed KIND: that kind's first list was in the control loop (nodes, pods, jobs, ...), in the order they came;
- rebuilt: the plane rebuilt from every list (nothing is written before);
- first pods written: the first turn (admit a batch of new jobs, settle, send their PodGroups and pods) ended;
- first bound: the watch saw the first pod bound (both contenders).

CPU: the contender's process's user + system seconds at the first binding (from /proc): what load does not
distort. `--profile DIR` runs caldera under py-spy (`/work/bench/tools/bin/py-spy` or `$PY_SPY`) and writes
its first 30 s as collapsed stacks per run (py-spy's sampling slows the process: its times are not the unprofiled ones).

    python benchmarks/kube_startup.py [--nodes 100] [--jobs 1000] [--repeat 3] [--contenders caldera,kube-scheduler]
        [--profile DIR]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

from caldera.system.kubernetes import FIRST_WRITES, LISTED, STARTED
from caldera.testing.kube import FakeNode, Process, add_nodes, install_volcano_crds, running_cluster
from caldera.testing.kube import start_kube_scheduler as start_scheduler
from caldera.testing.kube.calderactl import caldera_command
from kube_schedulers import NAMESPACE, PODS, VOLCANO_JOBS, BindWatch, create_all, plain_pod, volcano_job  # beside this

TIMEOUT = 600.0
PY_SPY = os.environ.get("PY_SPY", "/work/bench/tools/bin/py-spy")
MILESTONES = (STARTED, "leading", f"{LISTED} ", "rebuilt", FIRST_WRITES)


def log_stamp(line: str) -> float | None:
    """The time of a line of the controller's log (`2026-11-28 18:14:40,123 INFO ...`), local time."""
    try:
        return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    except ValueError:
        return None


def milestones(log: Path, t0: float) -> list[tuple[str, float]]:
    """(milestone, seconds after t0) for each milestone line of caldera's log, in order."""
    found: list[tuple[str, float]] = []
    for line in log.read_text(errors="replace").splitlines():
        at = log_stamp(line)
        message = line.split(": ", 1)[1] if ": " in line else ""
        if at is None or not message.startswith(MILESTONES):
            continue
        label = message.split(" (", 1)[0] if message.startswith("rebuilt") else message.split(":", 1)[0]
        found.append((label if not message.startswith(LISTED) else message, at - t0))
    return found


def run(
    contender: str, nodes: int, jobs: int, profile: Path | None, index: int
) -> tuple[float, float, list[tuple[str, float]]]:
    with running_cluster(controller_manager=False) as plane:
        add_nodes(plane, [FakeNode(f"node-{i}", cpu="32", memory="256Gi", gpus=8) for i in range(nodes)], timeout=1800)
        plane.create_namespace(NAMESPACE)
        if contender == "caldera":
            install_volcano_crds(plane)
            create_all(plane, VOLCANO_JOBS, (volcano_job(j, 1) for j in range(jobs)))
        else:
            create_all(plane, PODS, (plain_pod(j, 0) for j in range(jobs)))
        watch = BindWatch(plane, 1)
        t0 = time.time()
        if contender == "caldera":
            command = [*caldera_command(), "controller", f"--kubeconfig={plane.kubeconfig}", "-v"]
            if profile is not None:
                profile.mkdir(parents=True, exist_ok=True)
                stacks = profile / f"caldera-startup-{index}.txt"  # collapsed stacks (flamegraph.pl's input)
                command = [
                    PY_SPY,
                    "record",
                    "--rate",
                    "100",
                    "--duration",
                    "30",
                    "--format",
                    "raw",
                    "-o",
                    str(stacks),
                    "--",
                    *command,
                ]
            process: Process = plane.start_process("caldera-controller", command)
        else:
            process = start_scheduler(plane)
        if not watch.done.wait(TIMEOUT) or watch.error is not None:
            raise SystemExit(
                f"{contender}: no pod bound in {TIMEOUT:g}s ({watch.error or 'timed out'}):\n{process.log_tail()}"
            )
        with watch.changed:
            first = min(min(seen) for seen in watch.by_job.values()) - t0
        cpu = process.cpu_seconds()
        watch.stop()
        if contender == "caldera":  # its first turn may end after its first pods were bound
            deadline = time.time() + TIMEOUT
            while FIRST_WRITES not in process.log_file.read_text(errors="replace") and time.time() < deadline:
                threading.Event().wait(0.2)
        if profile is not None and contender == "caldera":  # py-spy writes its stacks when its 30 s are over
            deadline = time.time() + 120
            while process.running and time.time() < deadline:
                threading.Event().wait(0.5)
        marks = milestones(process.log_file, t0) if contender == "caldera" else []
    return first, cpu, marks


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: every control plane is stopped and removed
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--contenders", default="caldera,kube-scheduler")
    parser.add_argument("--profile", type=Path, help="run caldera under py-spy; its stacks in this directory")
    args = parser.parse_args()
    firsts: dict[str, list[float]] = {}
    for index in range(args.repeat):
        for contender in args.contenders.split(","):
            first, cpu, marks = run(contender, args.nodes, args.jobs, args.profile, index)
            firsts.setdefault(contender, []).append(first)
            load = os.getloadavg()[0]
            steps = ", ".join(f"{label} {at:.2f}" for label, at in marks)
            print(f"run {index + 1}, {contender}: first bound {first:.2f} s, CPU {cpu:.2f} s, load {load:.1f}"
                  + (f"; {steps}" if steps else ""), flush=True)  # fmt: skip
    for contender, values in firsts.items():
        print(f"{contender}: first bound, median of {len(values)}: {statistics.median(values):.2f} s", flush=True)


if __name__ == "__main__":
    main()
