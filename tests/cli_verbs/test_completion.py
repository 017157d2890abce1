"""Shell completion: `caldera completion bash|zsh|fish`, and job, queue and node names asked of the cluster."""

from __future__ import annotations

import pytest
from click.shell_completion import BashComplete

from caldera.cli.common import CliContext
from caldera.cli.main import cli
from caldera.testing.fake_cluster import FakeCluster

from .conftest import Run
from .manifests import job, queue


def complete(fake: FakeCluster | None, args: list[str], incomplete: str) -> list[str]:
    obj = CliContext(cluster=fake) if fake is not None else CliContext()
    comp = BashComplete(cli, {"obj": obj}, "caldera", "_CALDERA_COMPLETE")
    return [item.value for item in comp.get_completions(args, incomplete)]


@pytest.fixture
def jobs(fake: FakeCluster) -> FakeCluster:
    fake.apply(job("train"))
    fake.apply(job("tune"))
    fake.apply(job("eval", namespace="lab"))
    fake.apply(queue("research"))
    return fake


@pytest.mark.parametrize("verb", ["get", "logs", "describe", "delete", "wait", "suspend", "resume", "scale"])
def test_job_names_complete(jobs: FakeCluster, verb: str) -> None:
    assert complete(jobs, [verb], "t") == ["train", "tune"]
    assert complete(jobs, [verb, "-n", "lab"], "") == ["eval"]


def test_queue_node_and_verb_names_complete(jobs: FakeCluster) -> None:
    assert complete(jobs, ["queue", "close"], "re") == ["research"]
    assert complete(jobs, ["node", "label"], "") == ["node-0"]
    assert "priorityclass" in complete(jobs, [], "p") and "completion" in complete(jobs, [], "c")


def test_no_daemon_means_no_names_never_an_error(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALDERA_HOME", str(tmp_path))
    assert complete(None, ["get"], "") == []


@pytest.mark.parametrize(
    ("shell", "marker"), [("bash", "complete -o nosort"), ("zsh", "compdef"), ("fish", "complete")]
)
def test_completion_prints_the_shells_code(run: Run, shell: str, marker: str) -> None:
    from click.testing import CliRunner

    r = CliRunner().invoke(cli, ["completion", shell])
    assert r.exit_code == 0 and marker in r.output and "_CALDERA_COMPLETE" in r.output
