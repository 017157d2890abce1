"""CPU per pod of the local executor: `--pods` pods of `true` started and reported, under each shim.

For each shim (the C one, `caldera-shim`, when `make` built it, and shim.py) the local executor
of a temporary home runs the pods, `--parallel` at a time, each to its reported end. Times:

- the pod's CPU: the shims' and their commands' user + system time (RUSAGE_CHILDREN: the executor
  reaps the shims, the shims their commands), divided by the pods;
- the executor's CPU (this process: preparing the directory, spawning, proc.json, watching), per pod;
- the wall time per pod (on a loaded machine it measures the load; the CPU figures much less).

    python benchmarks/pod_start.py [--pods 200] [--parallel 16] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import threading
import time
from pathlib import Path

from caldera.backends.local import LocalExecutor
from caldera.backends.process import ProcessEvent, ProcessSpec, pod_dir
from caldera.backends.spawn import NATIVE_SHIM, SHIM_VAR, shim_command


def cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def one_round(pods: int, parallel: int) -> tuple[float, float, float]:
    """(pod CPU, executor CPU, wall) per pod, in seconds."""
    ended = threading.Semaphore(0)

    def report(event: ProcessEvent) -> None:
        assert event.exit_code == 0, event
        ended.release()

    with tempfile.TemporaryDirectory(prefix="caldera-pods-") as tmp:
        home = Path(tmp)
        executor = LocalExecutor(home, report)
        env = {"PATH": os.environ.get("PATH", os.defpath)}
        children, own, start = cpu(resource.RUSAGE_CHILDREN), cpu(resource.RUSAGE_SELF), time.perf_counter()
        try:
            for i in range(pods):
                if i >= parallel:
                    ended.acquire()
                key = f"default/p{i}"
                executor.run(ProcessSpec(key=key, argv=("true",), env=env, pod_dir=str(pod_dir(home, key))))
            for _ in range(min(parallel, pods)):
                ended.acquire()
        finally:
            executor.close()
        wall = time.perf_counter() - start
        return (
            (cpu(resource.RUSAGE_CHILDREN) - children) / pods,
            (cpu(resource.RUSAGE_SELF) - own) / pods,
            wall / pods,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--parallel", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    shims = ["python"]
    if shim_command() == [str(NATIVE_SHIM)]:
        shims.insert(0, "c")
    else:
        print(f"no C shim ({NATIVE_SHIM}; `make shim` builds it): shim.py only")
    for which in shims:
        if which == "python":
            os.environ[SHIM_VAR] = "python"
        rounds = [one_round(args.pods, args.parallel) for _ in range(args.rounds)]
        pod, own, wall = (statistics.median(r[i] for r in rounds) for i in range(3))
        name = "caldera-shim (C)" if which == "c" else "shim.py"
        print(
            f"{name}: {args.pods} pods of `true`, {args.parallel} at a time, median of {args.rounds} rounds: "
            f"pod CPU {pod * 1000:.1f} ms, executor CPU {own * 1000:.1f} ms, wall {wall * 1000:.1f} ms per pod"
        )


if __name__ == "__main__":
    main()
