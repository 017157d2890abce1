"""`make demo` (for now): simulate the gang-deadlock scenario and the CTR job, and print their timelines.

Both use the real scheduler and controller on a virtual clock, from the example
files in `examples/simulate/` (the same files `caldera simulate` reads).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from caldera.cli.render import print_timeline
from caldera.scheduler.scheduler import Scheduler
from caldera.sim.engine import Simulation
from caldera.sim.inputs import load
from caldera.sim.report import build

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "simulate"

SCENARIOS = (
    (
        "Gang scheduling: two 4-worker jobs on 4 GPUs",
        "gang",
        "Pod by pod, each job would take two GPUs and wait forever for two more. As gangs, one job runs "
        "with all four GPUs and the other binds nothing until it ends.",
    ),
    (
        "The PaddlePaddle CTR job: 2 pservers + 2 trainers",
        "ctr",
        "All four pods start together (minAvailable 4). When the trainers finish, TaskCompleted → "
        "CompleteJob completes the job and stops the pservers.",
    ),
)


def main() -> None:
    console = Console()
    for title, name, story in SCENARIOS:
        console.rule(f"[bold]{title}")
        console.print(story)
        cluster, workload = load(str(EXAMPLES / f"{name}-cluster.yaml"), str(EXAMPLES / f"{name}-workload.yaml"))
        sim = Simulation(cluster, workload, Scheduler())
        sim.run()
        print_timeline(build(sim), console)


if __name__ == "__main__":
    main()
