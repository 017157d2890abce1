"""The progress model on its own: gangs, checkpoints, stale ends, idle and lost GPU-seconds."""

from __future__ import annotations

import pytest

from caldera.sim.progress import Progress, WorkReport

JOB = "default/j"


def pod(i: int) -> str:
    return f"default/j-worker-{i}"


def gang(min_available: int = 2, checkpoint: float | None = None) -> Progress:
    p = Progress()
    p.add_job(JOB, min_available, checkpoint)
    return p


def test_a_gang_is_timed_when_its_last_member_starts() -> None:
    p = gang()
    assert p.start(JOB, pod(0), 100.0, 1.0, False, now=0.0) == []
    assert sorted(p.start(JOB, pod(1), 100.0, 1.0, False, now=30.0)) == [(pod(0), 130.0), (pod(1), 130.0)]
    assert p.ends_now(pod(0), 130.0) and not p.ends_now(pod(0), 100.0)
    assert p.report(JOB, 130.0) == WorkReport(idle_gpu_seconds=30.0, run_seconds=100.0)  # pod 0 held a GPU for nothing


def test_a_member_lost_stops_the_others_and_its_replacement_resumes_them() -> None:
    p = gang(checkpoint=20.0)
    p.start(JOB, pod(0), 100.0, 1.0, False, now=0.0)
    p.start(JOB, pod(1), 100.0, 1.0, False, now=0.0)
    p.stop(pod(1), now=50.0)  # 50 done, 40 saved by the last checkpoint
    assert not p.ends_now(pod(0), 100.0), "the survivor's end was timed for a gang that is gone"
    assert not p.will_end(pod(0))
    again = dict(p.start(JOB, pod(1), 100.0, 1.0, False, now=70.0))
    assert again == {pod(0): 120.0, pod(1): 130.0}  # pod 0 kept its 50, pod 1 its checkpointed 40
    report = p.report(JOB, 130.0)
    assert (report.lost_gpu_seconds, report.idle_gpu_seconds) == (10.0, 20.0)


def test_down_and_up_at_the_same_instant_keeps_the_ends_already_timed() -> None:
    p = gang(min_available=2)
    p.start(JOB, pod(0), 100.0, 1.0, False, now=0.0)
    p.start(JOB, pod(1), 100.0, 1.0, False, now=0.0)
    p.stop(pod(1), now=40.0)
    assert p.start(JOB, pod(1), 100.0, 1.0, False, now=40.0) == [(pod(1), 140.0)]  # from zero: no checkpoint
    assert p.ends_now(pod(0), 100.0), "pod 0 never stopped making progress"


def test_a_run_restarted_in_place_runs_its_whole_duration_again() -> None:
    p = gang(min_available=1, checkpoint=10.0)
    p.start(JOB, pod(0), 100.0, 1.0, False, now=0.0)
    p.ended(pod(0), now=100.0)
    assert p.start(JOB, pod(0), 100.0, 1.0, True, now=100.0) == [(pod(0), 200.0)]


def test_a_pod_that_ended_still_counts_for_its_gang() -> None:
    p = gang(min_available=2)
    p.start(JOB, pod(0), 50.0, 1.0, False, now=0.0)
    p.start(JOB, pod(1), 100.0, 1.0, False, now=0.0)
    p.ended(pod(0), now=50.0)
    assert p.ends_now(pod(1), 100.0)


def test_ends_of_the_same_instant_as_a_stop_still_hold() -> None:
    p = gang(min_available=2)
    for i in range(3):
        p.start(JOB, pod(i), 100.0 if i < 2 else 500.0, 1.0, False, now=0.0)
    p.stop(pod(2), now=100.0)
    p.stop(pod(1), now=100.0)  # the gang goes down at 100, the very instant pod 0's work is done
    assert p.ends_now(pod(0), 100.0)


@pytest.mark.parametrize(("checkpoint", "kept"), [(None, 0.0), (0.0, 75.0), (25.0, 75.0), (30.0, 60.0)])
def test_what_a_stop_keeps(checkpoint: float | None, kept: float) -> None:
    p = gang(min_available=1, checkpoint=checkpoint)
    p.start(JOB, pod(0), 100.0, 2.0, False, now=0.0)
    p.stop(pod(0), now=75.0)
    assert p.start(JOB, pod(0), 100.0, 2.0, False, now=80.0) == [(pod(0), 80.0 + 100.0 - kept)]
    assert p.report(JOB, 80.0).lost_gpu_seconds == (75.0 - kept) * 2.0


def test_remaining_is_the_work_the_furthest_pod_still_needs() -> None:
    p = gang(min_available=1, checkpoint=10.0)
    assert p.remaining(JOB, 100.0, now=0.0) == 100.0
    p.start(JOB, pod(0), 100.0, 1.0, False, now=0.0)
    assert p.remaining(JOB, 100.0, now=35.0) == 65.0
    p.stop(pod(0), now=35.0)
    assert p.remaining(JOB, 100.0, now=50.0) == 70.0  # back to the checkpoint at 30
    assert p.remaining(JOB, None, now=50.0) is None


def test_preemptions_count_instants_not_pods() -> None:
    p = gang()
    p.preempted(JOB, 10.0)
    p.preempted(JOB, 10.0)
    p.preempted(JOB, 20.0)
    assert p.report(JOB, 30.0).preemptions == 2


def test_a_pod_of_no_known_job_runs_its_duration() -> None:
    p = Progress()
    assert p.start("default/other", "default/other-0", 10.0, 0.0, False, now=5.0) == [("default/other-0", 15.0)]
    assert p.ends_now("default/other-0", 15.0)
