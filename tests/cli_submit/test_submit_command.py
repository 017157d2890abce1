"""`caldera submit ...` through click: flags to manifest, usage errors, --dry-run, the client hook."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from caldera.cli import submit as submit_module
from caldera.cli.submit import submit
from caldera.cli.submitspec import DATA_ANNOTATION, TENSORBOARD_ANNOTATION
from caldera.core.errors import CalderaError
from caldera.core.jobmanifest import parse_job
from caldera.core.objects import Job


def run(*args: str) -> Result:
    return CliRunner().invoke(submit, list(args), prog_name="caldera submit")


def dry_run(*args: str) -> Job:
    result = run(*args)
    assert result.exit_code == 0, result.output
    return parse_job(yaml.safe_load(result.output))


def error_line(result: Result) -> str:
    """The one line click prints for a usage error."""
    lines = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize(
    ("args", "tasks", "min_available", "plugin"),
    [
        pytest.param(["pytorch", "--workers", "3"], {"master": 1, "worker": 2}, 3, "pytorch", id="pytorch"),
        pytest.param(["pytorch"], {"master": 1}, 1, "pytorch", id="pytorch-default-one"),
        pytest.param(["pytorch", "--elastic", "--workers", "2:4"], {"worker": 4}, 2, "svc", id="pytorch-elastic"),
        pytest.param(
            ["tf", "--ps", "2", "--workers", "2", "--chief"],
            {"ps": 2, "worker": 2, "chief": 1},
            5,
            "tensorflow",
            id="tf",
        ),
        pytest.param(
            ["paddle", "--pservers", "2", "--trainers", "2"], {"pserver": 2, "trainer": 2}, 4, "paddle", id="paddle-ps"
        ),
        pytest.param(["paddle", "--trainers", "3"], {"trainer": 3}, 3, "paddle", id="paddle-collective"),
        pytest.param(["mpi", "--workers", "2"], {"master": 1, "worker": 2}, 3, "mpi", id="mpi"),
        pytest.param(["pytorchjob", "--workers", "2"], {"master": 1, "worker": 1}, 2, "pytorch", id="arena-alias"),
    ],
)
def test_dry_run_prints_yaml_that_parses_back(
    args: list[str], tasks: dict[str, int], min_available: int, plugin: str
) -> None:
    job = dry_run(*args, "--name", "demo", "--dry-run", "--", "python", "train.py")
    assert job.name == "demo"
    assert {t.name: t.replicas for t in job.spec.tasks} == tasks
    assert job.spec.min_available == min_available
    assert plugin in job.spec.plugins


def test_flags_reach_the_manifest(tmp_path: Path) -> None:
    job = dry_run(
        "pytorch",
        "--name=ddp",
        "-n",
        "research",
        "--workers=2",
        "--gpus=1",
        "--cpu=2",
        "--memory=4Gi",
        "--queue=team-a",
        "-p",
        "high",
        "-e",
        "LR=0.1",
        "--env",
        "MODE=a=b",
        "--working-dir",
        "/work",
        "--data",
        f"{tmp_path}:data",
        "--tensorboard",
        "--logdir",
        "runs",
        "--retry",
        "2",
        "--image",
        "pytorch/pytorch:2.3",
        "--dry-run",
        "--",
        "python",
        "train.py",
        "--workers",
        "3",
    )
    assert (job.namespace, job.spec.queue, job.spec.priority_class_name, job.spec.max_retry) == (
        "research",
        "team-a",
        "high",
        2,
    )
    assert job.metadata.annotations == {TENSORBOARD_ANNOTATION: "runs"}
    for task in job.spec.tasks:
        [c] = task.template.spec.containers
        # Everything after `--` is the command's, even a flag caldera also has.
        assert c.command == ("python", "train.py", "--workers", "3")
        assert [(e.name, e.value) for e in c.env] == [("LR", "0.1"), ("MODE", "a=b")]
        assert c.working_dir == "/work"
        assert c.image == "pytorch/pytorch:2.3"
        assert c.requests == {"cpu": 2000.0, "memory": 4 * 2**30, "nvidia.com/gpu": 1000.0}
        assert task.template.annotations == {DATA_ANNOTATION: f"{tmp_path}:data"}


def test_a_relative_data_source_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mnist").mkdir()
    monkeypatch.chdir(tmp_path)
    job = dry_run("pytorch", "--name", "x", "--data", "mnist:data", "--dry-run", "--", "python", "t.py")
    assert job.spec.tasks[0].template.annotations[DATA_ANNOTATION] == f"{tmp_path / 'mnist'}:data"


def test_mpi_worker_command_is_split_like_a_shell_would() -> None:
    job = dry_run("mpi", "--name", "x", "--worker-command", "python serve.py --port '8 0'", "--dry-run", "--", "mpirun")
    worker = job.spec.task("worker")
    assert worker is not None
    assert worker.template.spec.containers[0].command == ("python", "serve.py", "--port", "8 0")


@pytest.mark.parametrize(
    ("args", "mentions"),
    [
        pytest.param(["pytorch", "--name", "x", "--env", "FOO", "--", "t"], "--env", id="env-without-value"),
        pytest.param(["pytorch", "--name", "x", "--workers", "0", "--", "t"], "--workers", id="pytorch-workers-0"),
        pytest.param(["tf", "--name", "x", "--workers", "0", "--", "t"], "--workers", id="tf-workers-0"),
        pytest.param(["mpi", "--name", "x", "--workers", "0", "--", "t"], "--workers", id="mpi-workers-0"),
        pytest.param(["paddle", "--name", "x", "--trainers", "0", "--", "t"], "--trainers", id="paddle-trainers-0"),
        pytest.param(["pytorch", "--name", "x", "python", "train.py"], "after `--`", id="missing-dashes"),
        pytest.param(["pytorch", "--name", "x"], "after `--`", id="missing-command"),
        pytest.param(["pytorch", "--name", "x", "--"], "command is empty", id="nothing-after-dashes"),
        pytest.param(["pytorch", "--name", "x", "--", "python train.py"], "sh -c", id="command-in-one-string"),
        pytest.param(["pytorch", "--name", "Bad_Name", "--", "t"], "--name", id="bad-name"),
        pytest.param(["pytorch", "--name", "a" * 50, "--", "t"], "--name", id="name-too-long"),
        pytest.param(["pytorch", "--", "t"], "--name", id="no-name"),
        pytest.param(["pytorch", "--name", "x", "--workers", "2:4", "--", "t"], "--elastic", id="range-not-elastic"),
        pytest.param(["pytorch", "--name", "x", "--cpu", "lots", "--", "t"], "--cpu", id="bad-cpu"),
        pytest.param(["pytorch", "--name", "x", "--memory", "0", "--", "t"], "--memory", id="zero-memory"),
        pytest.param(["pytorch", "--name", "x", "--gpus", "-1", "--", "t"], "--gpus", id="negative-gpus"),
        pytest.param(["pytorch", "--name", "x", "--retry", "0", "--", "t"], "--retry", id="retry-0"),
        pytest.param(["pytorch", "--name", "x", "--queue", "Q!", "--", "t"], "--queue", id="bad-queue"),
        pytest.param(["pytorch", "--name", "x", "--tensorboard", "--", "t"], "--logdir", id="tensorboard-no-logdir"),
        pytest.param(["pytorch", "--name", "x", "--logdir", "runs", "--", "t"], "--tensorboard", id="logdir-alone"),
        pytest.param(["pytorch", "--name", "x", "--data", "/no/such/dir:d", "--", "t"], "--data", id="data-missing"),
        pytest.param(["pytorch", "--name", "x", "--data", "/tmp:/", "--", "t"], "--data", id="data-root-dst"),
        pytest.param(
            ["mpi", "--name", "x", "--worker-command", "'open", "--", "t"], "--worker-command", id="bad-quote"
        ),
        pytest.param(["horovod", "--name", "x", "--", "t"], "horovod", id="unknown-framework"),
    ],
)
def test_bad_input_is_a_one_line_usage_error(args: list[str], mentions: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(submit_module, "submit_manifest", sent.append)
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert mentions in error_line(result)
    assert sent == []


@pytest.mark.parametrize("framework", ["pytorch", "tf", "paddle", "mpi"])
def test_help_needs_no_command(framework: str) -> None:
    result = run(framework, "--help")
    assert result.exit_code == 0
    assert f"caldera submit {framework} [OPTIONS] -- COMMAND..." in result.output


def test_without_dry_run_the_manifest_goes_to_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(submit_module, "submit_manifest", sent.append)
    result = run("paddle", "--name", "ctr", "--pservers", "2", "--trainers", "2", "--", "python", "ctr.py")
    assert result.exit_code == 0, result.output
    assert result.output == "job default/ctr submitted\n"
    [manifest] = sent
    assert parse_job(manifest).spec.min_available == 4


def test_without_a_daemon_submit_says_how_to_start_one() -> None:
    result = run("pytorch", "--name", "x", "--", "python", "t.py")
    assert isinstance(result.exception, CalderaError)
    assert str(result.exception) == "the caldera daemon is not running: start it with `caldera up`"
