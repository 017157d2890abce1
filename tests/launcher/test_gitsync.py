"""`python -m caldera.launcher.gitsync`: a real git clone of a local repository, then the command, in a pod's directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from caldera.launcher.gitsync import repository_name

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=GIT_ENV, timeout=60)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository `models` whose default branch says "main" and whose branch `dev` says "dev"."""
    path = tmp_path / "models"
    path.mkdir()
    git(path, "init", "--quiet", "--initial-branch=main")
    (path / "hello.py").write_text("print('hello from main')\n")
    git(path, "add", "hello.py")
    git(path, "commit", "--quiet", "-m", "main")
    git(path, "checkout", "--quiet", "-b", "dev")
    (path / "hello.py").write_text("print('hello from dev')\n")
    git(path, "commit", "--quiet", "-am", "dev")
    git(path, "checkout", "--quiet", "main")
    return path


def gitsync(pod_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    pod_dir.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "caldera.launcher.gitsync", *args],
        cwd=pod_dir,
        capture_output=True,
        text=True,
        env=GIT_ENV,
        timeout=120,
        check=False,
    )


def test_it_clones_into_code_then_runs_the_command_there(repo: Path, tmp_path: Path) -> None:
    pod = tmp_path / "pod"
    r = gitsync(pod, "--repo", str(repo), "--", sys.executable, "code/models/hello.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"caldera gitsync: cloned {repo} into {pod / 'code' / 'models'}",
        "hello from main",
    ]
    (pod / "code" / "models" / "stale.txt").write_text("left by the last run")
    again = gitsync(pod, "--repo", str(repo), "--branch", "dev", "--", sys.executable, "code/models/hello.py")
    assert again.returncode == 0 and again.stdout.splitlines()[-1] == "hello from dev"
    assert not (pod / "code" / "models" / "stale.txt").exists()  # a fresh clone at every start


def test_the_commands_exit_code_is_the_pods(repo: Path, tmp_path: Path) -> None:
    r = gitsync(tmp_path / "pod", "--repo", str(repo), "--", sys.executable, "-c", "raise SystemExit(3)")
    assert r.returncode == 3


def test_a_failed_clone_says_why_and_runs_nothing(tmp_path: Path) -> None:
    r = gitsync(tmp_path / "pod", "--repo", str(tmp_path / "nothing"), "--", "touch", "ran")
    assert r.returncode == 1 and f"cannot clone {tmp_path / 'nothing'}" in r.stderr
    assert not (tmp_path / "pod" / "ran").exists()
    unknown = gitsync(tmp_path / "pod2", "--repo", str(tmp_path), "--branch", "nope", "--", "true")
    assert unknown.returncode == 1 and "at nope" in unknown.stderr


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("https://github.com/kubeflow/arena.git", "arena"),
        ("git@github.com:kubeflow/arena.git", "arena"),
        ("/srv/repos/models/", "models"),
        ("host:repo", "repo"),
    ],
)
def test_the_clone_is_named_as_git_names_it(source: str, name: str) -> None:
    assert repository_name(source) == name
