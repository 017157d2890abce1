"""Why a job waits, as a user reads it: `list`'s REASON, `get`/`describe`'s Waiting line, `caldera explain`.

"Never fits" (a nodeSelector no node matches, a queue whose capability is below the gang's
minimum) is told apart from "not now" (GPUs another job holds), which goes away by itself.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import SLEEPER, Caldera, all_running, job_manifest

pytestmark = pytest.mark.e2e


def reasons(cal: Caldera) -> dict[str, str]:
    """Job → its REASON cell in `caldera list` (the last column)."""
    lines = cal.ok("list").splitlines()
    assert lines[0].split()[-1] == "REASON"
    return {line.split()[0]: line.split()[-1] for line in lines[1:]}


def waits_because(cal: Caldera, name: str, reason: str) -> None:
    cal.wait_job(name, lambda j: (j.get("waiting") or {}).get("reason") == reason, f"job {name} to say {reason}")


def with_selector(manifest: dict[str, Any], **labels: str) -> dict[str, Any]:
    manifest["spec"]["tasks"][0]["template"]["spec"]["nodeSelector"] = labels
    return manifest


def test_never_fits_is_told_apart_from_not_now(caldera: Caldera) -> None:
    caldera.up("--nodes", "3", "--gpus-per-node", "2")
    caldera.apply(with_selector(job_manifest("sel", SLEEPER, replicas=2), disk="ssd"))
    caldera.ok("queue", "create", "small", "--capability", "nvidia.com/gpu=2")
    caldera.apply(job_manifest("big", SLEEPER, replicas=4, gpus=1, queue="small"))
    caldera.apply(job_manifest("first", SLEEPER, replicas=6, gpus=1))
    caldera.wait_job("first", all_running(6), "the first job to hold every GPU")
    caldera.apply(job_manifest("second", SLEEPER, replicas=2, gpus=1))
    for name, reason in (("sel", "NeverFits"), ("big", "NeverFits"), ("second", "Unschedulable")):
        waits_because(caldera, name, reason)
    assert reasons(caldera) == {"big": "NeverFits", "first": "-", "second": "Unschedulable", "sel": "NeverFits"}

    described = caldera.ok("describe", "sel")
    assert (
        "Waiting:" in described and "labels do not match disk=ssd (never, as the nodes and the queue are" in described
    )
    assert (
        "queue small's capability (nvidia.com/gpu 2) is less than the job's minimum (nvidia.com/gpu 4)"
        in caldera.ok("get", "big")
    )
    got = caldera.ok("get", "second")
    assert "Unschedulable:" in got and "(not now;" in got

    explained = caldera.ok("explain", "sel")
    assert "NeverFits: it can never run as the nodes and its queue are." in explained
    assert "never: task worker fits no node: 3 node(s): labels do not match disk=ssd" in explained
    assert "node-0" in explained  # the node class, by its nodes
    second = caldera.json("explain", "second")
    assert second["never"] == [] and second["now"], second
    assert [t["fitsNow"] for c in second["nodeClasses"] for t in c["tasks"]] == [0]

    # Not now means not for ever: once the GPUs are free the second job runs and says nothing more.
    caldera.ok("delete", "first")
    caldera.wait_job("second", all_running(2), "the second job to run once the GPUs are free")
    assert caldera.job("second")["waiting"] is None
    assert reasons(caldera)["second"] == "-"
