"""Write a Pollux/Sia sample of the Philly trace as a job list of Tiresias' simulator.

    .venv/bin/python scripts/tiresias_jobs.py SEED [RATE_SCALE] > jobs.csv

The columns are those its README asks for (`job_id,num_gpu,submit_time,iterations,model_name,duration,
interval`); model, iterations and interval are not used by its schedulers and are constant. Job ids
follow submission order (ties by name), so a job of caldera's report is found again by that order.
Run there, on the sample's cluster of 8 nodes × 8 GPUs (`--cluster_spec` a CSV of
`num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node` = `1,8,8,64,512`), with
`--scheme=count --schedule=dlas-gpu` (or `shortest-gpu`, `fjf`). docs/policies.md has what it gave.
"""

from __future__ import annotations

import sys

from caldera.core.errors import CalderaError
from caldera.sim.sources import Selection, load_inputs


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        seed, scale = int(argv[0]), float(argv[1]) if len(argv) > 1 else 1.0
    except ValueError:
        print("tiresias_jobs.py: SEED must be an integer and RATE_SCALE a number", file=sys.stderr)
        return 2
    try:
        inputs = load_inputs(None, None, "philly", Selection(sample="pollux", seed=seed, rate_scale=scale))
    except CalderaError as e:  # no trace, a bad row: one line, as `caldera simulate` says it
        print(f"tiresias_jobs.py: {e}", file=sys.stderr)
        return 1
    rows = sorted(
        (a.submit_time, a.job.metadata.name, sum(t.replicas for t in a.job.spec.tasks), a.duration)
        for a in inputs.workload.jobs
    )
    print("job_id,num_gpu,submit_time,iterations,model_name,duration,interval")
    for i, (submit, _name, gpus, duration) in enumerate(rows):
        print(f"{i},{gpus},{round(submit)},1000,resnet50,{round(duration or 0)},0")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
