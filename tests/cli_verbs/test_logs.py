"""`caldera logs`: rank 0 by default (instances listed on stderr), -i, -t, -f."""

from __future__ import annotations

import pytest

from caldera.testing.fake_cluster import FakeCluster

from .conftest import NOW, Run
from .manifests import job


@pytest.fixture
def logged(fake: FakeCluster) -> FakeCluster:
    fake.apply(job("train"))
    for pod in ("train-master-0", "train-worker-0", "train-worker-1"):
        fake.write_log("default", pod, f"{pod}: one\n{pod}: two\n{pod}: three\n")
    return fake


def test_default_is_the_master_and_the_instances_go_to_stderr(run: Run, logged: FakeCluster) -> None:
    r = run("logs", "train")
    assert r.exit_code == 0
    assert r.stdout == "train-master-0: one\ntrain-master-0: two\ntrain-master-0: three\n"
    assert r.stderr == (
        "job default/train has 3 instances: train-master-0, train-worker-0, train-worker-1; "
        "showing train-master-0 (choose with -i)\n"
    )


def test_rank_0_follows_the_spec_order_of_tasks(run: Run, fake: FakeCluster) -> None:
    manifest = job("ps")
    tasks = manifest["spec"]["tasks"]  # type: ignore[index]
    tasks[0]["name"], tasks[1]["name"] = "trainer", "pserver"  # trainer first, though "pserver" sorts first
    fake.apply(manifest)
    fake.write_log("default", "ps-trainer-0", "I am the trainer\n")
    assert run("logs", "ps").stdout == "I am the trainer\n"


@pytest.mark.parametrize(
    ("tasks", "job_type", "shown"),
    [
        pytest.param(("ps", "worker", "chief"), "TFJob", "chief-0", id="tf-chief"),
        pytest.param(("ps", "worker"), "TFJob", "worker-0", id="tf-worker-0-is-the-chief"),
        pytest.param(("ps", "worker", "master"), "TFJob", "master-0", id="tf-master"),
        pytest.param(("pserver", "trainer"), "PaddleJob", "trainer-0", id="paddle-ps"),
        pytest.param(("master", "worker"), "PaddleJob", "worker-0", id="kubeflow-paddle-master-is-the-server"),
        pytest.param(("launcher", "worker"), "MPIJob", "launcher-0", id="kubeflow-mpi"),
        pytest.param(("evaluator", "other"), "", "evaluator-0", id="none-known-first-in-spec-order"),
    ],
)
def test_the_default_is_the_chief_never_a_parameter_server(
    run: Run, fake: FakeCluster, tasks: tuple[str, ...], job_type: str, shown: str
) -> None:
    manifest = job("tf", workers=1)
    template = manifest["spec"]["tasks"][0]["template"]  # type: ignore[index]
    manifest["spec"]["tasks"] = [{"name": t, "replicas": 1, "template": template} for t in tasks]  # type: ignore[index]
    if job_type:
        manifest["metadata"]["labels"] = {"volcano.sh/job-type": job_type}  # type: ignore[index]
    fake.apply(manifest)
    for t in tasks:
        fake.write_log("default", f"tf-{t}-0", f"I am {t}-0\n")
    r = run("logs", "tf")
    assert r.exit_code == 0 and r.stdout == f"I am {shown}\n"
    assert r.stderr.endswith(f"showing tf-{shown} (choose with -i)\n")


def test_a_single_pod_job_lists_nothing(run: Run, fake: FakeCluster) -> None:
    fake.apply(job("solo", workers=0))
    fake.write_log("default", "solo-master-0", "alone\n")
    r = run("logs", "solo")
    assert r.stdout == "alone\n" and r.stderr == ""


@pytest.mark.parametrize("instance", ["train-worker-1", "worker-1"])
def test_instance_by_name_or_short_name(run: Run, logged: FakeCluster, instance: str) -> None:
    r = run("logs", "train", "-i", instance, "-t", "1")
    assert r.exit_code == 0 and r.stdout == "train-worker-1: three\n" and r.stderr == ""


def test_an_unknown_instance(run: Run, logged: FakeCluster) -> None:
    r = run("logs", "train", "-i", "worker-9")
    assert r.exit_code == 2
    assert r.stderr == (
        "caldera: error: worker-9 is not an instance of job default/train "
        "(instances: train-master-0, train-worker-0, train-worker-1)\n"
    )


def test_follow_a_finished_pod_prints_it_all_and_returns(run: Run, logged: FakeCluster) -> None:
    logged.set_pod("default", "train-master-0", phase="Succeeded", exit_code=0)
    r = run("logs", "train", "-f", "-t", "2")
    assert r.exit_code == 0 and r.stdout == "train-master-0: two\ntrain-master-0: three\n"


def test_a_job_without_pods_yet(run: Run, fake: FakeCluster) -> None:
    fake.apply(job("train"))
    fake.jobs[("default", "train")].pods.clear()
    r = run("logs", "train")
    assert r.exit_code == 2 and r.stderr == "caldera: error: job default/train has no pods yet (it is Pending)\n"


def test_since_and_timestamps_ask_the_cluster_for_lines_by_time(run: Run, fake: FakeCluster) -> None:
    fake.apply(job("t", workers=0))
    fake.write_log("default", "t-master-0", "old\n")  # at CREATED, NOW - 125 s
    fake.clock.set(NOW - 30)  # type: ignore[attr-defined]
    fake.write_log("default", "t-master-0", "recent\n")
    fake.clock.set(NOW)  # type: ignore[attr-defined]
    assert run("logs", "t", "--since", "1m").stdout == "recent\n"
    assert run("logs", "t", "--since-time", "1970-01-12T13:48:00Z").stdout == "recent\n"  # NOW - 45 s
    stamped = run("logs", "t", "--timestamps").stdout.splitlines()
    assert stamped == ["1970-01-12T13:46:40.000000Z old", "1970-01-12T13:48:15.000000Z recent"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--since", "soon"], "--since", id="bad-duration"),
        pytest.param(["--since-time", "yesterday"], "is not an RFC 3339 time", id="bad-time"),
        pytest.param(["--since", "1m", "--since-time", "2024-01-01T00:00:00Z"], "not both", id="both"),
    ],
)
def test_bad_since(run: Run, logged: FakeCluster, args: list[str], message: str) -> None:
    r = run("logs", "train", *args)
    assert r.exit_code == 2 and message in r.stderr


TWO_ATTEMPTS = (
    "=== attempt 0 started 2026-01-01T00:00:00+00:00 ===\nfirst\nboom\n"
    "=== attempt 1 started 2026-01-01T00:00:10+00:00 ===\nsecond\n"
)


def test_previous_is_the_attempt_before_the_last(run: Run, logged: FakeCluster) -> None:
    logged.write_log("default", "train-worker-1", TWO_ATTEMPTS)
    r = run("logs", "train", "-i", "worker-1", "--previous")
    assert r.exit_code == 0
    assert r.stdout == "=== attempt 0 started 2026-01-01T00:00:00+00:00 ===\nfirst\nboom\n"
    assert run("logs", "train", "-i", "worker-1", "-p", "-t", "1").stdout == "boom\n"


def test_previous_without_an_earlier_attempt_is_an_error(run: Run, logged: FakeCluster) -> None:
    r = run("logs", "train", "-i", "worker-0", "-p")
    assert r.exit_code == 2 and "has no previous attempt" in r.stderr


def test_previous_cannot_be_followed(run: Run, logged: FakeCluster) -> None:
    r = run("logs", "train", "-p", "-f")
    assert r.exit_code == 2
    assert r.stderr == "caldera: error: --previous and --follow do not go together: an earlier attempt has ended\n"


def test_previous_goes_with_no_time_filter(run: Run, logged: FakeCluster) -> None:
    r = run("logs", "train", "-p", "--timestamps")
    assert r.exit_code == 2 and "--previous goes with neither" in r.stderr
