"""`caldera wait`: 0 when the phase is reached, 1 on timeout or another end, 2 for an unknown job."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from caldera.cli.common import CliContext
from caldera.cli.wait import wait
from caldera.testing.fake_cluster import FakeCluster
from caldera.utils.clock import ManualClock

from .conftest import NOW, Run
from .manifests import job


@pytest.fixture
def train(fake: FakeCluster) -> FakeCluster:
    fake.apply(job("train"))
    return fake


def test_reached(run: Run, train: FakeCluster) -> None:
    train.set_phase("default", "train", "Completed")
    r = run("wait", "train")
    assert r.exit_code == 0 and r.stdout == "job default/train is Completed\n"


def test_phase_names_are_case_insensitive(run: Run, train: FakeCluster) -> None:
    train.set_phase("default", "train", "Running")
    assert run("wait", "train", "--for", "running").exit_code == 0


@pytest.mark.parametrize("end", ["Failed", "Terminated", "Aborted", "Completed"])
def test_another_terminal_phase_exits_1(run: Run, train: FakeCluster, end: str) -> None:
    train.set_phase("default", "train", end, reason="PodFailed", message="train-worker-0 exited 1")
    r = run("wait", "train", "--for", "Running")
    assert r.exit_code == 1
    assert r.stderr == f"caldera: error: job default/train is {end}, not Running (PodFailed: train-worker-0 exited 1)\n"


def test_timeout_exits_1_on_the_virtual_clock(run: Run, train: FakeCluster, clock: ManualClock) -> None:
    r = run("wait", "train", "--timeout", "30")
    assert r.exit_code == 1
    assert r.stderr == (
        "caldera: error: timed out after 30s waiting for job default/train to be Completed (it is Pending)\n"
    )
    assert clock.now() == NOW + 30


class Progressing(FakeCluster):
    """A job that moves on by one phase each time it is looked at."""

    def __init__(self, log_dir: Path) -> None:
        super().__init__(log_dir)
        self.phases = ["Pending", "Running", "Running", "Completed"]

    def get_job(self, namespace: str, name: str) -> dict[str, object]:
        if self.phases:
            self.set_phase(namespace, name, self.phases.pop(0))
        return super().get_job(namespace, name)


def test_polls_until_reached(tmp_path: Path, clock: ManualClock) -> None:
    fake = Progressing(tmp_path)
    fake.apply(job("train"))
    result = CliRunner().invoke(wait, ["train", "--timeout", "60"], obj=CliContext(cluster=fake, clock=clock))
    assert result.exit_code == 0 and result.stdout == "job default/train is Completed\n"
    assert clock.now() == NOW + 1.5  # three polls half a second apart


def test_a_negative_timeout_is_a_usage_error(run: Run, train: FakeCluster) -> None:
    assert run("wait", "train", "--timeout", "-1").exit_code == 2


def test_an_unknown_phase_is_a_usage_error(run: Run, train: FakeCluster) -> None:
    r = run("wait", "train", "--for", "Done")
    assert r.exit_code == 2 and "Invalid value for '--for'" in r.stderr
