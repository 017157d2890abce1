"""Arena's --selector, --toleration and --sync-mode git on `caldera submit`, and the job's type label."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from caldera.cli.submit import submit
from caldera.cli.submitspec import parse_toleration
from caldera.core.jobmanifest import parse_job
from caldera.core.objects import Job, Toleration


def run(*args: str) -> Result:
    return CliRunner().invoke(submit, list(args), prog_name="caldera submit")


def dry_run(*args: str) -> Job:
    result = run(*args)
    assert result.exit_code == 0, result.output
    return parse_job(yaml.safe_load(result.output))


def test_selectors_and_tolerations_reach_every_pod() -> None:
    job = dry_run(
        "tf", "--name", "t", "--ps", "1", "--workers", "2",
        "--selector", "gpu=a100", "--selector", "zone=a,rack=3",
        "--toleration", "gpu=a100:NoSchedule", "--toleration", "spot",
        "--dry-run", "--", "python", "t.py",
    )  # fmt: skip
    for task in job.spec.tasks:
        assert dict(task.template.spec.node_selector) == {"gpu": "a100", "zone": "a", "rack": "3"}
        assert task.template.spec.tolerations == (
            Toleration(key="gpu", operator="Equal", value="a100", effect="NoSchedule"),
            Toleration(key="spot", operator="Exists"),
        )


@pytest.mark.parametrize(
    ("text", "toleration"),
    [
        pytest.param("all", {"operator": "Exists"}, id="all"),
        pytest.param("spot", {"key": "spot", "operator": "Exists"}, id="key"),
        pytest.param("spot:noschedule", {"key": "spot", "effect": "NoSchedule", "operator": "Exists"}, id="key-effect"),
        pytest.param(
            "gpu=a100:NoExecute", {"key": "gpu", "value": "a100", "effect": "NoExecute", "operator": "Equal"}, id="kv"
        ),
        pytest.param(
            "gpu_node=invalid:NoSchedule,Equal",
            {"key": "gpu_node", "value": "invalid", "effect": "NoSchedule", "operator": "Equal"},
            id="arena-legacy",
        ),
        pytest.param("gpu:NoSchedule:Exists", {"key": "gpu", "effect": "NoSchedule", "operator": "Exists"}, id="op"),
    ],
)
def test_arenas_toleration_spellings(text: str, toleration: dict[str, str]) -> None:
    assert parse_toleration(text) == toleration


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--toleration", "gpu=a:Sometimes"], "the effect 'Sometimes' is not one of", id="bad-effect"),
        pytest.param(
            ["--toleration", "gpu=a:NoSchedule:Exists"], "the Exists operator takes no value", id="exists-value"
        ),
        pytest.param(["--selector", "gpu"], "'gpu' is not a node label k=v", id="selector-no-value"),
        pytest.param(["--sync-mode", "rsync"], "'rsync' is not 'git'", id="rsync"),
        pytest.param(["--sync-mode", "git"], "--sync-mode git needs --sync-source", id="no-source"),
        pytest.param(["--sync-branch", "dev"], "--sync-source and --sync-branch go with --sync-mode git", id="no-mode"),
        pytest.param(
            ["--sync-mode", "git", "--sync-source", "no/such/dir"], "neither a repository URL nor a directory", id="dir"
        ),
    ],
)
def test_bad_arena_flags_are_usage_errors(args: list[str], message: str) -> None:
    result = run("pytorch", "--name", "p", *args, "--", "python", "t.py")
    assert result.exit_code == 2 and message in result.output


def test_sync_clones_before_the_command_and_the_pods_run_where_the_code_is(tmp_path: Path) -> None:
    job = dry_run(
        "mpi", "--name", "m", "--workers", "1", "--sync-mode", "git", "--sync-source", str(tmp_path),
        "--sync-branch", "dev", "--dry-run", "--", "mpirun", "python", "code/x/t.py",
    )  # fmt: skip
    launcher = job.spec.task("master")
    assert launcher is not None
    (container,) = launcher.template.spec.containers
    assert container.command == (
        "python", "-m", "caldera.launcher.gitsync", "--repo", str(tmp_path), "--branch", "dev",
        "--", "mpirun", "python", "code/x/t.py",
    )  # fmt: skip
    assert container.working_dir == ""  # the pod's own directory, where code/ is
    url = dry_run("pytorch", "--name", "p", "--sync-mode", "git", "--sync-source", "https://h/r.git", "--dry-run",
                  "--", "python", "t.py")  # fmt: skip
    assert url.spec.tasks[0].template.spec.containers[0].command[4] == "https://h/r.git"


@pytest.mark.parametrize(
    ("framework", "kind"),
    [("pytorch", "PyTorchJob"), ("tf", "TFJob"), ("paddle", "PaddleJob"), ("mpi", "MPIJob")],
)
def test_a_submitted_job_carries_its_type(framework: str, kind: str) -> None:
    job = dry_run(framework, "--name", "j", "--dry-run", "--", "python", "t.py")
    assert job.metadata.labels == {"volcano.sh/job-type": kind}
