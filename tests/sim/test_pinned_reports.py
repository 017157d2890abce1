"""A small, busy replay's whole report, pinned byte for byte under every shipped policy and the
built-in configuration before caldera-default (Volcano's shape with preempt and reclaim): speed work on the simulator, controller and scheduler must not change what they decide.

The workload is drawn with a fixed seed: 100 gangs of 1 to 16 one-GPU pods in three queues of
different weights, arriving over three hours on 8 nodes × 8 GPUs (busy enough for queueing,
preemption and reclaim), half of them checkpointing, some failing (restarts, retries), a node lost
and a pod killed on the way. Each run's report (`caldera simulate -o json`'s) is hashed, sorted keys.

A change that is meant to change decisions (a policy's semantics) changes these digests: check the new
reports are what it means, then print the new digests with `python -m tests.sim.test_pinned_reports`.
"""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from caldera.core import objects as o
from caldera.scheduler.config import default_config, volcano_shape_config
from caldera.scheduler.policies import POLICIES, load_policy
from caldera.scheduler.scheduler import Scheduler
from caldera.sim.engine import Simulation
from caldera.sim.inputs import Cluster, Fault, JobArrival, Workload
from caldera.sim.report import build
from caldera.sim.traces import gang_job
from caldera.testing.builders import make_node

SEED = 12
VOLCANO_SHAPE = "volcano-shape"  # scheduler/config.py VOLCANO_SHAPE_CONFIG, the built-in one until caldera-default

PINNED = {
    "volcano-shape": "e8e5b6681563b8dcfe3f427cdd59eb8e3abdf126eb681a85e87f868d568de792",
    "fifo-nogang": "e9188879d9eaf2284373b6d2584169405637531cfdba0d2ba877520661cf77e4",
    "kube-default": "e9188879d9eaf2284373b6d2584169405637531cfdba0d2ba877520661cf77e4",
    "gang-fifo-backfill": "e0fec912732b571ae5eb482f45e2fadf2d1387bd6a0e8496497741fb0c93b725",
    "volcano-default": "0ae71fa572ffb2c7669bc1d0d373c1afc771f78d39cd0868d024208d5f504b5f",
    "caldera-default": "e75f8d4bc1ddea3fc2199c0eaaf22b1b8a6658d85f786ad28091e28d01bd55ee",
    "las": "fb7468fec62429cd43943dce43e45d04c9811decef8d30e0139396fa124e8fad",
    "srtf": "1f6e7e99e0931e32f0e9fae5bc349fada111e9b90eb8afc008bad3922c9e1095",
    "srtf-gpu": "cc9a42000c06f9c459fd8e7d0f84f041f9669fe6cb196d99330766c9ecb4a1af",
}


def inputs() -> tuple[Cluster, Workload]:
    rng = random.Random(SEED)
    nodes = tuple(
        make_node(f"node-{i:02d}", resources={"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}) for i in range(8)
    )
    queues = tuple(
        o.Queue(o.ObjectMeta(name=q, namespace=""), spec=o.QueueSpec(weight=w))
        for q, w in (("a", 1), ("b", 2), ("c", 1))
    )
    arrivals = []
    for j in range(100):
        gpus = rng.choice((1, 1, 1, 1, 2, 2, 4, 8, 8, 16))
        checkpoint = 300.0 if rng.random() < 0.5 else None
        job = gang_job(f"job-{j:03d}", rng.choice("abc"), gpus, checkpoint=checkpoint)
        duration = round(60 * 10 ** rng.uniform(0, 2.5))
        exit_code = 1 if rng.random() < 0.05 else 0
        arrivals.append(JobArrival(round(rng.uniform(0, 3 * 3600)), job, float(duration), exit_code=exit_code))
    arrivals.sort(key=lambda a: a.submit_time)
    faults = (Fault(time=5000.0, node="node-03"), Fault(time=7000.0, pod="default/job-050-worker-0", exit_code=3))
    return Cluster(nodes, queues, ()), Workload(tuple(arrivals), faults)


def digest(policy: str) -> str:
    cluster, workload = inputs()
    config = volcano_shape_config() if policy == VOLCANO_SHAPE else load_policy(policy)
    sim = Simulation(cluster, workload, Scheduler(config))
    sim.run()
    text = json.dumps(build(sim), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def test_every_shipped_policy_is_pinned() -> None:
    assert set(PINNED) == {VOLCANO_SHAPE, *POLICIES}


def test_the_built_in_configuration_is_caldera_default() -> None:
    # so caldera-default's digest is also the built-in configuration's
    assert default_config() == load_policy("caldera-default")


@pytest.mark.parametrize("policy", list(PINNED))
def test_the_report_is_the_pinned_one(policy: str) -> None:
    assert digest(policy) == PINNED[policy]


if __name__ == "__main__":
    for name in PINNED:
        print(f'    "{name}": "{digest(name)}",')
