"""A SyncJob of a job nothing touched since a sync left it settled is skipped (reconcile.py), and only then."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from caldera.controller import execute
from caldera.controller.events import SYNC_JOB
from caldera.core import objects as o

from .simkit import task
from .test_control_plane import plane_with, submit


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The controller's plans, counted by action."""
    counted: Counter[str] = Counter()

    def counting(*args: Any, **kwargs: Any) -> Any:
        counted[args[2]] += 1
        return execute(*args, **kwargs)

    monkeypatch.setattr("caldera.system.reconcile.execute", counting)
    return counted


def test_a_single_pod_job_is_planned_three_times_not_five(plans: Counter[str]) -> None:
    """Submitted (PodGroup made), admitted (pod made), its PodPending (skipped: the sync that made the pod
    counted it Pending), bound (Running), and the re-sync its phase change asks for (skipped: the sync
    that made it Running knew it would be idle, `resync_is_idle`)."""
    plane, executor, _ = plane_with()
    submit(plane, "one", tasks=[task(replicas=1)])
    assert executor.started == ["one-worker-0"]
    assert plane.jobs["default/one"].status.phase == o.RUNNING
    assert plans == {SYNC_JOB: 3}


def test_a_resync_that_would_move_the_job_on_is_run(plans: Counter[str]) -> None:
    """A pod that ended while its job was still Pending: the sync that makes the job Running is followed by
    the re-sync that completes it (not idle, so not skipped)."""
    plane, _, clock = plane_with()
    submit(plane, "one", tasks=[task(replicas=1)])
    job = plane.jobs["default/one"]
    job.status = replace(job.status, phase=o.PENDING)  # as if the pod's end came before the Running sync
    clock.advance(60)
    plane.pod_exited("default/one-worker-0", 0)
    plane.settle()
    assert job.status.phase == o.COMPLETED
    # Completed by that re-sync, in the same settle round: before any scheduling cycle saw the pod's end.
    assert [(e.kind, e.reason) for e in plane.events[-3:]] == [
        ("PodPhase", o.POD_SUCCEEDED),
        ("JobPhase", o.RUNNING),
        ("JobPhase", o.COMPLETED),
    ]


def test_a_change_after_the_job_settled_is_synced(plans: Counter[str]) -> None:
    plane, _, clock = plane_with()
    submit(plane, "one", tasks=[task(replicas=1)])
    before = plans[SYNC_JOB]
    clock.advance(60)
    plane.pod_exited("default/one-worker-0", 0)
    plane.settle()
    assert plans[SYNC_JOB] > before
    job = plane.jobs["default/one"]
    assert job.status.phase == o.COMPLETED
    assert job.status.succeeded == 1
