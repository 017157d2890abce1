"""When the runtime stops the node's zygotes (system/zygoteusers.py)."""

from caldera.system.zygoteusers import ZygoteUsers


def test_a_single_pod_job_keeps_its_zygote_when_its_pod_dies_and_frees_it_when_deleted() -> None:
    users = ZygoteUsers()
    users.started("ns/a-w-0", "ns/a")
    assert not users.released("ns/a-w-0")  # the job re-creates the pod: its launcher forks from the zygote
    users.started("ns/a-w-0", "ns/a")
    assert not users.released("ns/a-w-0")  # finished and kept: the zygote exits when idle
    assert users.job_deleted("ns/a")


def test_a_job_deleted_while_its_pods_run_stops_the_zygotes_with_its_last_pod() -> None:
    users = ZygoteUsers()
    users.started("ns/a-w-0", "ns/a")
    users.started("ns/a-w-1", "ns/a")
    assert not users.job_deleted("ns/a")
    assert not users.released("ns/a-w-0")
    assert users.released("ns/a-w-1")


def test_another_jobs_pods_or_the_job_itself_keep_the_zygotes() -> None:
    users = ZygoteUsers()
    users.started("ns/a-w-0", "ns/a")
    users.started("ns/b-w-0", "ns/b")
    assert not users.released("ns/a-w-0")
    assert not users.job_deleted("ns/a")  # b's pod runs
    assert not users.released("ns/b-w-0")  # b may re-create it
    assert users.job_deleted("ns/b")


def test_jobs_that_never_used_a_zygote_change_nothing() -> None:
    users = ZygoteUsers()
    assert not users.job_deleted("ns/plain")
    assert not users.released("ns/plain-w-0")
    users.started("ns/a-w-0", "ns/a")
    assert not users.job_deleted("ns/plain")
    assert not users.released("ns/plain-w-0")
