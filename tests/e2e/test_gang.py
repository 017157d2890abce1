"""Gang scheduling on virtual nodes: of two jobs that each need every GPU, one runs whole, the other not at all."""

from __future__ import annotations

import pytest

from caldera.testing.waiting import wait_until

from .conftest import SLEEPER, Caldera, all_running, job_manifest, running_pods, unschedulable

pytestmark = pytest.mark.e2e


def test_two_gangs_of_four_gpus_on_four_virtual_gpus_run_one_after_the_other(caldera: Caldera) -> None:
    caldera.up("--nodes", "2", "--gpus-per-node", "2")
    nodes = caldera.json("top", "node")
    assert [(n["gpus"], n["virtualGpus"]) for n in nodes] == [(2, True), (2, True)]

    caldera.apply(job_manifest("first", SLEEPER, replicas=4, gpus=1))
    caldera.wait_job("first", all_running(4), "the first job's 4 pods to run")
    caldera.apply(job_manifest("second", SLEEPER, replicas=4, gpus=1))
    # The scheduler has looked at the second gang and left it out whole: its PodGroup says why.
    wait_until(lambda: unschedulable(caldera, "second"), timeout=60, what="the second gang to be found unschedulable")
    assert caldera.job("second")["phase"] == "Pending"
    assert running_pods(caldera.job("second")) == []
    assert [n["gpusUsed"] for n in caldera.json("top", "node")] == [2, 2]

    assert caldera.ok("delete", "first") == "job.batch.volcano.sh/first deleted\n"
    caldera.wait_job("second", all_running(4), "the second job's 4 pods to run once the first is gone")

    # Over the whole run, no pod of the second job was bound before every pod of the first had ended.
    events = caldera.events()
    first_ends = [e["id"] for e in events if e["object"].startswith("first-worker-") and e["kind"] == "PodDeleted"]
    second_binds = [e["id"] for e in events if e["object"].startswith("second-worker-") and e["kind"] == "Bind"]
    assert len(first_ends) == 4 and len(second_binds) == 4, events
    assert min(second_binds) > max(first_ends), events
    assert [n["gpusUsed"] for n in caldera.json("top", "node")] == [2, 2]
