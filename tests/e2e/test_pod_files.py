"""What a pod is given is reachable from where its command runs: `--data` (relative or Arena's absolute
target), the MPI hostfile and Volcano's hosts files; and a CPU Paddle job gets the gloo backend.

Jobs run in a working directory of the test's (`--working-dir`), as `caldera submit` from a
project directory would, so nothing is written into the repository.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Caldera, bring_down

pytestmark = pytest.mark.e2e

READ = "import sys; print('read', open(sys.argv[1]).read().strip())"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Caldera, Path, Path]]:
    """A daemon; a data set (`mnist/train.csv`); a project directory the jobs run in."""
    root = tmp_path_factory.mktemp("pod-files")
    cal = Caldera(root / "home")
    data = root / "mnist"
    data.mkdir()
    (data / "train.csv").write_text("x,y\n1,2\n")
    project = root / "project"
    project.mkdir()
    try:
        cal.up("--nodes", "2", "--gpus-per-node", "2")
        yield cal, data, project
    finally:
        bring_down(cal)


def completes(cal: Caldera, name: str) -> None:
    cal.wait_job(name, lambda j: j["phase"] in ("Completed", "Failed"), f"job {name} to end", timeout=90)
    assert cal.job(name)["phase"] == "Completed", cal.pod_log(f"{name}-master-0")


def test_a_relative_data_target_is_where_the_command_runs(daemon: tuple[Caldera, Path, Path]) -> None:
    cal, data, project = daemon
    cal.ok(
        "submit", "pytorch", "--name", "rel", "--workers", "2", "--working-dir", str(project),
        "--data", f"{data}:mnist_data", "--", "python", "-c", READ, "mnist_data/train.csv",
    )  # fmt: skip
    completes(cal, "rel")
    assert "read x,y\n1,2" in cal.pod_log("rel-master-0") and "read x,y" in cal.pod_log("rel-worker-0")
    assert (project / "mnist_data").resolve() == data


def test_arenas_absolute_data_target_reads_the_data(daemon: tuple[Caldera, Path, Path]) -> None:
    cal, data, project = daemon
    cal.ok(
        "submit", "pytorch", "--name", "abs", "--workers", "1", "--working-dir", str(project),
        "--data", f"{data}:/mnist_data", "--", "python", "-c", READ, "/mnist_data/train.csv",
    )  # fmt: skip
    completes(cal, "abs")
    assert "read x,y\n1,2" in cal.pod_log("abs-master-0")
    assert not Path("/mnist_data").exists()  # nothing was made outside the pod's world


def test_the_mpi_hostfile_and_volcano_hosts_files_are_reachable(daemon: tuple[Caldera, Path, Path]) -> None:
    cal, _, project = daemon
    script = 'cat "$OMPI_MCA_orte_default_hostfile"; cat /etc/mpi/hostfile; echo hosts; cat /etc/volcano/worker.host'
    cal.ok(
        "submit", "mpi", "--name", "mpi", "--workers", "2", "--gpus", "1", "--working-dir", str(project),
        "--", "sh", "-c", script,
    )  # fmt: skip
    completes(cal, "mpi")
    log = cal.pod_log("mpi-master-0")
    assert log.count("127.0.0.1 slots=1\n") == 4, log  # two workers, from the variable and from /etc/mpi/hostfile
    assert "hosts\n127.0.0.1\n127.0.0.1\n" in log, log


def test_collective_paddle_on_cpu_gets_the_gloo_backend(daemon: tuple[Caldera, Path, Path]) -> None:
    cal, _, project = daemon
    show = "import os; print('backend', os.environ.get('PADDLE_DISTRI_BACKEND'))"
    cal.ok(
        "submit", "paddle", "--name", "pd", "--trainers", "2", "--working-dir", str(project),
        "--", "python", "-c", show,
    )  # fmt: skip
    cal.wait_job("pd", lambda j: j["phase"] == "Completed", "the paddle job to complete", timeout=90)
    for i in range(2):
        assert "backend gloo" in cal.pod_log(f"pd-trainer-{i}")


def test_a_data_link_never_replaces_what_is_in_the_working_directory(daemon: tuple[Caldera, Path, Path]) -> None:
    cal, data, project = daemon
    (project / "results").mkdir()
    r = cal.run(
        "submit", "pytorch", "--name", "clash", "--workers", "1", "--working-dir", str(project),
        "--data", f"{data}:results", "--", "python", "-c", "pass",
    )  # fmt: skip
    assert r.returncode == 2
    assert r.stderr == (
        "caldera: error: job clash: spec.tasks[0].template.metadata.annotations[caldera.dev/data]: "
        f"{project}/results exists and is not a link to {data}: choose another target, or remove it\n"
    )
    assert (project / "results").is_dir() and "clash" not in {j["name"] for j in cal.json("list")}
