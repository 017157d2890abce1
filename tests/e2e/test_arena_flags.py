"""Arena's flags on a real daemon: node labels and taints with --selector and --toleration, --priority, git sync."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .conftest import Caldera

pytestmark = pytest.mark.e2e

SAY_NODE = ["python", "-c", "import os; print('on', os.environ['CALDERA_NODE'])"]


def completed(job: dict[str, object]) -> bool:
    return job["phase"] == "Completed"


def node_of(caldera: Caldera, job: str) -> str:
    (pod,) = caldera.job(job)["pods"]
    return str(pod["node"])


def test_labels_and_taints_steer_pods_and_survive_a_restart(caldera: Caldera) -> None:
    caldera.up("--nodes", "2", "--node-labels", "node-1:gpu=a100", "--node-taints", "node-0:dedicated=infra:NoSchedule")
    # Only node-1 has the label; node-0's taint keeps untolerating pods away from it anyway.
    caldera.ok("submit", "pytorch", "--name", "picky", "--cpu", "100m", "--selector", "gpu=a100", "--", *SAY_NODE)
    caldera.ok("submit", "pytorch", "--name", "plain", "--cpu", "100m", "--", *SAY_NODE)
    for job in ("picky", "plain"):
        caldera.wait_job(job, completed, f"{job} to complete")
        assert node_of(caldera, job) == "node-1"
    # Label node-0 and tolerate its taint: a pod may now go there.
    assert caldera.ok("node", "label", "node-0", "zone=b") == "node/node-0 labeled\n"
    caldera.ok(
        "submit", "pytorch", "--name", "infra", "--cpu", "100m", "--selector", "zone=b",
        "--toleration", "dedicated=infra:NoSchedule", "--", *SAY_NODE,
    )  # fmt: skip
    caldera.wait_job("infra", completed, "the tolerating job to complete on node-0")
    assert node_of(caldera, "infra") == "node-0"
    assert caldera.ok("list", "--no-headers", "-l", "volcano.sh/job-type=PyTorchJob").count("PyTorchJob") == 3

    caldera.ok("down")
    caldera.up()
    nodes = {n["name"]: n for n in caldera.json("node", "list")}
    assert nodes["node-0"]["labels"]["zone"] == "b" and nodes["node-1"]["labels"]["gpu"] == "a100"
    assert nodes["node-0"]["taints"] == [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]


def test_a_priority_class_must_exist(caldera: Caldera) -> None:
    caldera.up()
    r = caldera.run("submit", "pytorch", "--name", "p", "--priority", "urgent", "--", "true")
    assert r.returncode == 2 and r.stdout == ""
    assert 'no PriorityClass named "urgent"' in r.stderr and "caldera priorityclass" in r.stderr
    caldera.ok("priorityclass", "create", "urgent", "--value", "1000")
    assert caldera.ok("submit", "pytorch", "--name", "p", "--priority", "urgent", "--", "true") == (
        "job default/p submitted\n"
    )


def test_git_sync_clones_a_local_repository_into_each_pod(caldera: Caldera, tmp_path: Path) -> None:
    repo = tmp_path / "models"
    repo.mkdir()
    (repo / "hello.py").write_text("import os\nprint('hello from', os.environ['CALDERA_POD'], 'in', os.getcwd())\n")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    for args in (["init", "--quiet"], ["add", "hello.py"], ["commit", "--quiet", "-m", "first"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True, timeout=60)
    caldera.up()
    caldera.ok(
        "submit", "pytorch", "--name", "synced", "--workers", "2", "--cpu", "100m",
        "--sync-mode", "git", "--sync-source", str(repo), "--", "python", "code/models/hello.py",
    )  # fmt: skip
    caldera.wait_job("synced", completed, "the synced job to complete")
    for pod in ("synced-master-0", "synced-worker-0"):
        where = caldera.pod_dir(pod)
        assert f"hello from {pod} in {where}" in caldera.pod_log(pod)
        assert (where / "code" / "models" / "hello.py").is_file()
