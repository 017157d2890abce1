"""Priority preemption and a queue's capability, as in simulation, but on real pods of a real daemon."""

from __future__ import annotations

import pytest

from caldera.testing.waiting import wait_until

from .conftest import SLEEPER, Caldera, all_running, job_manifest, running_pods, unschedulable

pytestmark = pytest.mark.e2e

PRIORITY_CLASSES = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
description: jobs that may preempt
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
"""


def test_a_high_priority_job_preempts_a_low_one_filling_the_gpus(caldera: Caldera) -> None:
    caldera.up("--nodes", "2", "--gpus-per-node", "2")
    assert caldera.apply(PRIORITY_CLASSES) == (
        "priorityclass.scheduling.k8s.io/high applied\npriorityclass.scheduling.k8s.io/low applied\n"
    )
    caldera.apply(job_manifest("low", SLEEPER, replicas=4, gpus=1, priority_class="low"))
    caldera.wait_job("low", all_running(4), "the low job to fill the 4 GPUs")

    caldera.apply(job_manifest("high", SLEEPER, replicas=4, gpus=1, priority_class="high"))
    caldera.wait_job("high", all_running(4), "the high job to run in the low one's place")

    low = caldera.json("describe", "low")
    preempted = sorted(e["object"] for e in low["events"] if e["kind"] == "Preempt")
    assert preempted == [f"low-worker-{i}" for i in range(4)], low["events"]
    assert all(e["message"] == "preempted by default/high" for e in low["events"] if e["kind"] == "Preempt")
    assert running_pods(low["summary"]) == []
    assert [n["gpusUsed"] for n in caldera.json("top", "node")] == [2, 2]
    # The other way round nothing moves: a low job does not preempt a high one.
    caldera.apply(job_manifest("later", SLEEPER, replicas=1, gpus=1, priority_class="low"))
    wait_until(lambda: unschedulable(caldera, "later"), timeout=60, what="the later low job to be left out")
    assert len(running_pods(caldera.job("high"))) == 4
    assert not any(e["kind"] == "Preempt" for e in caldera.json("describe", "high")["events"])


def test_a_queue_never_holds_more_than_its_gpu_capability(caldera: Caldera) -> None:
    caldera.up("--nodes", "2", "--gpus-per-node", "2")
    caldera.ok("queue", "create", "capped", "--capability", "nvidia.com/gpu=2")
    for name in ("q1", "q2", "q3"):
        caldera.apply(job_manifest(name, SLEEPER, gpus=1, queue="capped"))
    caldera.wait_job("q1", all_running(1), "q1 to run")
    caldera.wait_job("q2", all_running(1), "q2 to run")
    wait_until(lambda: unschedulable(caldera, "q3"), timeout=60, what="q3 to be held back by its queue")
    # Two of the four GPUs are free, yet the queue's third job waits.
    assert sum(n["gpusUsed"] for n in caldera.json("top", "node")) == 2
    assert caldera.job("q3")["phase"] == "Pending" and running_pods(caldera.job("q3")) == []

    # The free GPUs are not the queue's to take: a job of the default queue gets them.
    caldera.apply(job_manifest("other", SLEEPER, replicas=2, gpus=1))
    caldera.wait_job("other", all_running(2), "a job of the default queue to take the 2 free GPUs")
    assert running_pods(caldera.job("q3")) == []

    # Room in the queue: q3 runs once q1 is gone, and the queue is at 2 GPUs again.
    caldera.ok("delete", "q1")
    caldera.wait_job("q3", all_running(1), "q3 to run once q1 left the queue room")
    jobs = {j["name"]: j for j in caldera.json("list")}
    in_queue = [p for name in ("q1", "q2", "q3") if name in jobs for p in running_pods(jobs[name])]
    assert sorted(in_queue) == ["q2-worker-0", "q3-worker-0"]
    # ... and never more than 2 at a time: each bind of the queue's pods came after enough of them had ended.
    held = 0
    for e in caldera.events():
        if e["object"] in ("q1-worker-0", "q2-worker-0", "q3-worker-0"):
            held += {"Bind": 1, "PodDeleted": -1}.get(e["kind"], 0)
            assert held <= 2, caldera.events()
    assert held == 2
