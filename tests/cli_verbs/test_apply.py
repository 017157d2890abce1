"""`caldera apply -f`: every document checked first, queues before jobs, created/configured."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from caldera.testing.fake_cluster import FakeCluster

from .conftest import Run
from .manifests import job, queue, to_yaml


def write(tmp_path: Path, text: str, name: str = "job.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_apply_jobs_and_queues_queues_first(run: Run, fake: FakeCluster, tmp_path: Path) -> None:
    path = write(tmp_path, to_yaml(job(queue="research"), queue("research", weight=2)))
    r = run("apply", "-f", path)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == [
        "queue.scheduling.volcano.sh/research created",
        "job.batch.volcano.sh/train created",
    ]
    assert ("default", "train") in fake.jobs and fake.queues["research"]["spec"]["weight"] == 2
    assert fake.submit_dirs[("default", "train")] == str(tmp_path)  # relative paths start at the file


def test_relative_paths_of_stdin_start_where_apply_runs(run: Run, fake: FakeCluster) -> None:
    assert run("apply", "-f", "-", input=to_yaml(job())).exit_code == 0
    assert fake.submit_dirs[("default", "train")] == os.getcwd()


def test_apply_again_configures(run: Run, fake: FakeCluster, tmp_path: Path) -> None:
    path = write(tmp_path, to_yaml(job()))
    run("apply", "-f", path)
    r = run("apply", "-f", path)
    assert r.exit_code == 0 and r.stdout == "job.batch.volcano.sh/train configured\n"


def test_namespace_option_and_stdin(run: Run, fake: FakeCluster) -> None:
    r = run("apply", "-n", "team", "-f", "-", input=to_yaml(job()))
    assert r.exit_code == 0, r.stderr
    assert ("team", "train") in fake.jobs


def test_a_namespace_that_contradicts_the_manifest(run: Run, fake: FakeCluster, tmp_path: Path) -> None:
    r = run("apply", "-n", "team", "-f", write(tmp_path, to_yaml(job(namespace="other"))))
    assert r.exit_code == 2
    assert "metadata.namespace: namespace 'other' differs" in r.stderr
    assert fake.jobs == {}


def test_priority_class(run: Run, fake: FakeCluster, tmp_path: Path) -> None:
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    r = run("apply", "-f", write(tmp_path, to_yaml(pc)))
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "priorityclass.scheduling.k8s.io/high applied\n"
    assert fake.priority_classes["high"]["value"] == 1000


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(to_yaml({**job(), "spec": {"tasks": []}}), "spec.tasks", id="invalid-job"),
        pytest.param(to_yaml(queue("ok"), {**job(), "kind": "Deployment"}), "document[1]", id="second-doc-bad"),
        pytest.param("tasks: [\n", "YAML syntax error", id="not-yaml"),
        pytest.param("", "no object to apply", id="empty"),
    ],
)
def test_invalid_files_change_nothing(run: Run, fake: FakeCluster, tmp_path: Path, text: str, message: str) -> None:
    r = run("apply", "-f", write(tmp_path, text))
    assert r.exit_code == 2
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("caldera: error: ") and message in r.stderr
    assert fake.jobs == {} and list(fake.queues) == ["default"]


def test_admission_errors_from_the_cluster(run: Run, fake: FakeCluster, tmp_path: Path) -> None:
    fake.set_queue_state("default", "Closed")
    r = run("apply", "-f", write(tmp_path, to_yaml(job())))
    assert r.exit_code == 2 and "Closed" in r.stderr and fake.jobs == {}


def test_a_missing_file_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    r = run("apply", "-f", str(tmp_path / "nope.yaml"))
    assert r.exit_code == 2 and "does not exist" in r.stderr


def test_a_file_is_required(run: Run) -> None:
    r = run("apply")
    assert r.exit_code == 2 and "Missing option '-f'" in r.stderr
