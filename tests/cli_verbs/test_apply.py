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


SEED = Path(__file__).parents[1] / "fixtures" / "kubeflow-tfjob-seed.yaml"


def test_a_kubeflow_tfjob_is_applied_as_a_volcano_job_and_shown_under_its_kind(run: Run, fake: FakeCluster) -> None:
    r = run("apply", "-f", str(SEED))
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "tfjob.kubeflow.org/mnist-train created\n"
    # The seed's templates ask OnFailure; the replicas' default (Never) wins, as with Kubeflow, and apply says so.
    assert r.stderr.count("caldera: warning: tfjob.kubeflow.org/mnist-train: spec.tfReplicaSpecs.") == 3
    sent = fake.jobs[("default", "mnist-train")].manifest
    assert (sent["apiVersion"], sent["kind"]) == ("batch.volcano.sh/v1alpha1", "Job")
    assert [t["name"] for t in sent["spec"]["tasks"]] == ["chief", "ps", "worker"]
    assert run("apply", "-f", str(SEED)).stdout == "tfjob.kubeflow.org/mnist-train configured\n"

    row = run("list", "--no-headers").stdout.split()
    assert row[:2] == ["mnist-train", "TFJob"]
    assert run("get", "mnist-train", "-o", "name").stdout == "tfjob.kubeflow.org/mnist-train\n"
    assert run("list", "-o", "name", "-l", "volcano.sh/job-type=TFJob").stdout == "tfjob.kubeflow.org/mnist-train\n"
    shown = run("get", "tfjob", "mnist-train").stdout
    assert "Kind:" in shown and "TFJob (kubeflow.org/v1)" in shown and "mnist-train-chief-0" in shown
    assert run("get", "tfjob/mnist-train", "-o", "name").exit_code == 0
    assert run("get", "tfjobs", "--no-headers").stdout.split()[0] == "mnist-train"
    wrong = run("get", "pytorchjob/mnist-train")
    assert wrong.exit_code == 2 and "PyTorchJob default/mnist-train not found" in wrong.stderr


def test_a_bad_kubeflow_manifest_names_its_own_paths(run: Run, fake: FakeCluster, tmp_path: Path) -> None:
    text = SEED.read_text().replace("    Worker:\n", "    Wrker:\n")
    r = run("apply", "-f", write(tmp_path, text))
    assert r.exit_code == 2 and r.stdout == ""
    assert (
        "spec.tfReplicaSpecs.Wrker: unknown replica type; a TFJob has Chief, Master, PS, Worker, Evaluator" in r.stderr
    )
    assert fake.jobs == {}
