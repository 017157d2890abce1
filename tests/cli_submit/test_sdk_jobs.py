"""`caldera.jobs`: the SDK's job builders are `caldera submit`'s, keyword only, checked the same way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import caldera.jobs
from caldera.cli.submitspec import SubmitSpec, pytorch_job
from caldera.core.errors import ValidationError
from caldera.core.jobmanifest import parse_job


def test_a_builder_is_the_submit_manifest() -> None:
    job = caldera.jobs.pytorch(name="ddp", workers=3, command=["python", "train.py"], cpu="500m", env={"LR": "0.1"})
    same = pytorch_job(
        SubmitSpec(
            name="ddp", command=("python", "train.py"), cpu="500m", env=(("LR", "0.1"),), working_dir=os.getcwd()
        ),
        workers=3,
    )
    assert job == same
    assert [t.name for t in parse_job(job).spec.tasks] == ["master", "worker"]


def test_every_framework_and_its_options(tmp_path: Path) -> None:
    tf = caldera.jobs.tensorflow(
        name="tf", command=["python", "t.py"], ps=1, workers=2, chief=True, selector={"gpu": "a100"}
    )
    assert {t["name"] for t in tf["spec"]["tasks"]} == {"ps", "worker", "chief"}
    assert tf["spec"]["tasks"][0]["template"]["spec"]["nodeSelector"] == {"gpu": "a100"}
    paddle = caldera.jobs.paddle(name="pd", command=["python", "t.py"], trainers=2, tolerations=["all"])
    assert paddle["spec"]["tasks"][0]["template"]["spec"]["tolerations"] == [{"operator": "Exists"}]
    mpi = caldera.jobs.mpi(name="m", command=["mpirun", "python", "t.py"], workers=2, data=[f"{tmp_path}:data"])
    assert mpi["metadata"]["labels"] == {"volcano.sh/job-type": "MPIJob"}
    elastic = caldera.jobs.pytorch(name="el", command=["python", "t.py"], workers=4, elastic=True, min_workers=2)
    assert elastic["spec"]["minAvailable"] == 2


def test_the_command_runs_where_the_builder_was_called(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    job = caldera.jobs.pytorch(name="p", command=["python", "t.py"])
    assert job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["workingDir"] == str(tmp_path)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        pytest.param(
            lambda: caldera.jobs.pytorch(name="Bad_Name", command=["x"]), ValidationError, "metadata.name", id="name"
        ),
        pytest.param(
            lambda: caldera.jobs.pytorch(name="p", command=[]), ValidationError, "the command is empty", id="cmd"
        ),
        pytest.param(
            lambda: caldera.jobs.pytorch(name="p", command=["x"], gpu=1), TypeError, "unknown option 'gpu'", id="typo"
        ),
        pytest.param(
            lambda: caldera.jobs.pytorch(name="p", command=["x"], tolerations=["k:Sometimes"]),
            ValidationError,
            "the effect 'Sometimes'",
            id="toleration",
        ),
    ],
)
def test_bad_options_say_which(call: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()  # type: ignore[operator]
