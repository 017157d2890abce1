"""Elastic training on the embedded cluster, for real: the daemon's etcd, `caldera launch` in every pod, real DDP.

The job is examples/elastic-ddp (digits, gloo on CPU) checkpointing every epoch into a
directory the pods share. Faults are real `kill -9`s of real processes; scaling is the
`caldera scale` verb. The final accuracy of a run that was interrupted is compared with an
uninterrupted run of the same seed, which the module runs once.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caldera.launcher.server import find_etcd
from caldera.testing.waiting import wait_until

from .conftest import REPO, Caldera

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        importlib.util.find_spec("torch") is None or importlib.util.find_spec("sklearn") is None,
        reason="the elastic example needs torch and scikit-learn: pip install -e '.[examples]'",
    ),
    pytest.mark.skipif(find_etcd() is None, reason="no etcd binary (make installs Debian's etcd-server)"),
]

EPOCHS = 8
STEP_DELAY = "0.03"  # seconds per step: about 1.5 s per epoch, so a fault lands mid-training
ACCURACY = re.compile(r"^test accuracy (\d\.\d+)$", re.MULTILINE)
START = re.compile(r"^start world=(\d+) rank=(\d+) restart=(\d+) resume_epoch=(\d+)", re.MULTILINE)
LAUNCH_START = re.compile(r"^caldera-launch .* pids=(\d+) start$", re.MULTILINE)
EPOCH = re.compile(r"^epoch=(\d+) world=(\d+) rank=(\d+)", re.MULTILINE)
EPOCH_RESTART = re.compile(r"^epoch=(\d+) world=(\d+) rank=(\d+) restart=(\d+)", re.MULTILINE)
EPOCHS_UNTIL_STOPPED = 10_000  # the scale test trains until its stop file appears


def train_command(checkpoints: Path, epochs: int = EPOCHS) -> list[str]:
    return [
        "python", "examples/elastic-ddp/train.py", "--epochs", str(epochs), "--seed", "7",
        "--checkpoint", str(checkpoints), "--step-delay", STEP_DELAY,
    ]  # fmt: skip


def submit(caldera: Caldera, name: str, workers: str, checkpoints: Path) -> None:
    out = caldera.ok(
        "submit", "pytorch", "--name", name, "--elastic", "--workers", workers, "--cpu", "300m", "--",
        *train_command(checkpoints),
    )  # fmt: skip
    assert out == f"job default/{name} submitted\n", out


def logs(caldera: Caldera, job: dict[str, Any]) -> str:
    return "\n".join(caldera.pod_log(p["name"]) for p in job["pods"] if caldera.pod_dir(p["name"]).exists())


def all_logs(caldera: Caldera, name: str) -> str:
    """Every pod's log of the job, dead attempts included (a pod's directory keeps them)."""
    root = caldera.home / "pods" / "default"
    return "\n".join(
        (d / "log").read_text(errors="replace") for d in sorted(root.glob(f"{name}-*")) if (d / "log").exists()
    )


def accuracy(text: str) -> float:
    found = ACCURACY.findall(text)
    assert len(found) == 1, f"expected one accuracy line (rank 0), found {found}"
    return float(found[0])


def epochs_checkpointed(caldera: Caldera, name: str) -> int:
    """The last epoch whose checkpoint is on disk: rank 0 logs an epoch after saving it. (Other ranks log
    theirs without waiting for rank 0's save, so a fault right after their line may find the previous
    checkpoint.)"""
    return max((int(e) for e, _, rank in EPOCH.findall(all_logs(caldera, name)) if rank == "0"), default=0)


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def launcher_and_trainer(caldera: Caldera, pod: str) -> tuple[int, int]:
    """(the launcher's pid: the shim's one child; the training process its last `start` line names).

    The training process is a spare forked by the node's zygote, outside the pod's process tree (the
    launcher's child only when it had to start a cold spare); either way it ends with its launcher."""
    shim = int(json.loads((caldera.pod_dir(pod) / "proc.json").read_text())["pid"])
    (launcher,) = children(shim)
    starts = LAUNCH_START.findall(caldera.pod_log(pod))
    assert starts, f"{pod} has started no worker"
    trainer = int(starts[-1])
    assert Path(f"/proc/{trainer}").exists(), f"worker {trainer} of launcher {launcher} is not running"
    return launcher, trainer


def completed(job: dict[str, Any]) -> bool:
    if job["phase"] in ("Failed", "Aborted", "Terminated"):
        raise AssertionError(f"job ended {job['phase']}: {job}")
    return job["phase"] == "Completed"


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[float]:
    """The accuracy of an uninterrupted run of 3 workers with the same seed."""
    from .conftest import kill_leftovers

    home = tmp_path_factory.mktemp("baseline-home")
    caldera = Caldera(home)
    try:
        caldera.up()
        submit(caldera, "base", "3", tmp_path_factory.mktemp("baseline-ckpt"))
        caldera.wait_job("base", completed, "the uninterrupted run to complete", timeout=240)
        yield accuracy(all_logs(caldera, "base"))
    finally:
        caldera.run("down")
        kill_leftovers(home)


@pytest.mark.parametrize("victim", ["trainer", "launcher", "pod"])
def test_a_killed_worker_pauses_training_which_resumes_from_its_checkpoint(
    caldera: Caldera, tmp_path: Path, baseline: float, victim: str
) -> None:
    caldera.up()
    submit(caldera, "el", "3", tmp_path / "ckpt")
    wait_until(lambda: epochs_checkpointed(caldera, "el") >= 2, timeout=180, what="epoch 2 saved", interval=0.1)

    launcher, trainer = launcher_and_trainer(caldera, "el-worker-1")
    if victim == "trainer":
        os.kill(trainer, signal.SIGKILL)  # the user's code dies; the pod's launcher lives
    elif victim == "launcher":
        os.kill(launcher, signal.SIGKILL)  # the pod's main process dies: its trainer goes with it
    else:
        os.killpg(os.getpgid(launcher), signal.SIGKILL)  # the whole pod
    caldera.wait_job("el", completed, "the job to complete after the fault", timeout=240)

    job = caldera.job("el")
    assert job["retryCount"] == 0  # recovered pod by pod, never restarted as a whole
    text = all_logs(caldera, "el")
    restarts = [(int(w), int(r), int(e)) for w, _, r, e in START.findall(text) if int(r) > 0]
    assert restarts, f"no restart logged:\n{text[-3000:]}"
    assert all(world == 3 for world, _, _ in restarts)  # survivors waited for the third worker
    assert any(epoch >= 2 for _, _, epoch in restarts)  # resumed from a checkpoint, not from zero
    assert abs(accuracy(text) - baseline) <= 0.01, (accuracy(text), baseline)
    if victim != "trainer":  # the pod itself died: the controller re-created it under its name
        assert (caldera.pod_dir("el-worker-1") / "log").exists()
        status = caldera.describe("el")["job"]["status"]
        assert status.get("podRetries") == {"el-worker-1": 1}, status


def test_scale_out_and_in_while_training(caldera: Caldera, tmp_path: Path) -> None:
    caldera.up()
    stop = tmp_path / "stop"
    command = [*train_command(tmp_path, epochs=EPOCHS_UNTIL_STOPPED), "--stop-file", str(stop)]
    manifest = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "sc", "annotations": {"caldera.dev/elastic-max-worker": "4"}},
        "spec": {
            "minAvailable": 2,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 2,
                    "minAvailable": 2,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "main",
                                    "command": ["python", "-m", "caldera.launcher", "--", *command],
                                    "workingDir": str(REPO),
                                    "resources": {"requests": {"cpu": "300m"}},
                                }
                            ],
                        }
                    },
                }
            ],
        },
    }
    caldera.apply(json.dumps(manifest))

    def epochs() -> list[tuple[int, int, int]]:
        """(epoch, world, restart) of every epoch line of rank 0."""
        found = EPOCH_RESTART.findall(all_logs(caldera, "sc"))
        return [(int(e), int(w), int(r)) for e, w, rank, r in found if rank == "0"]

    wait_until(lambda: any(w == 2 for _, w, _ in epochs()), timeout=180, what="an epoch at world 2", interval=0.1)
    caldera.ok("scale", "sc", "--replicas", "4")
    wait_until(lambda: any(w == 4 for _, w, _ in epochs()), timeout=120, what="an epoch at world 4", interval=0.1)
    caldera.ok("scale", "sc", "--replicas", "2")

    def scaled_in() -> bool:
        at_4 = max(r for _, w, r in epochs() if w == 4)
        return any(w == 2 and r > at_4 for _, w, r in epochs())

    wait_until(scaled_in, timeout=120, what="an epoch at world 2 after the scale-in", interval=0.1)
    stop.touch()  # the job trains until told: it cannot end at world 4 before the scale-in took effect
    caldera.wait_job("sc", completed, "the scaled job to complete", timeout=240)

    _, last_world, _ = max(epochs())
    assert last_world == 2, epochs()  # trained at 4, finished at 2
    assert caldera.job("sc")["retryCount"] == 0
    pods = {p["name"] for p in caldera.job("sc")["pods"]}
    assert pods == {"sc-worker-0", "sc-worker-1"}, pods  # scale-in removed the highest indices


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_single_pod_job_whose_pod_dies_forks_its_new_worker_from_the_same_zygote(
    caldera: Caldera, tmp_path: Path
) -> None:
    """The node's zygote outlives the job's only pod while the job lives (system/zygoteusers.py): the
    re-created pod's launcher forks its worker from it instead of importing torch again."""
    caldera.up()
    submit(caldera, "one", "1", tmp_path / "ckpt")
    wait_until(lambda: epochs_checkpointed(caldera, "one") >= 1, timeout=180, what="epoch 1 saved", interval=0.1)
    launcher, trainer = launcher_and_trainer(caldera, "one-worker-0")
    zygote = parent(trainer)
    assert zygote != launcher, "the worker is a cold spare, not a fork of the node's zygote"

    os.killpg(os.getpgid(launcher), signal.SIGKILL)  # the whole pod

    def new_trainer() -> int:
        starts = (
            LAUNCH_START.findall(caldera.pod_log("one-worker-0")) if caldera.pod_dir("one-worker-0").exists() else []
        )
        pid = int(starts[-1]) if starts else 0
        return pid if pid != trainer and Path(f"/proc/{pid}").exists() else 0

    found: list[int] = []
    wait_until(
        lambda: found.append(new_trainer()) or found[-1], timeout=180, what="the re-created pod's worker", interval=0.1
    )
    assert parent(found[-1]) == zygote  # forked by the zygote that served the pod before it died
    caldera.wait_job("one", completed, "the job to complete after the fault", timeout=240)
    assert caldera.describe("one")["job"]["status"].get("podRetries") == {"one-worker-0": 1}
