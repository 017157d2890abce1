"""examples/paddle-ps-ctr really trains: 2 pservers + 2 trainers on the Paddle parameter-server env."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest
import yaml
from example_processes import EXAMPLES, Proc, Start, free_ports

TRAIN = EXAMPLES / "paddle-ps-ctr" / "train.py"


def paddle_env(role: str, index: int, pservers: list[int], trainers: list[int]) -> dict[str, str]:
    """What caldera's paddle plugin injects into pod `index` of the pserver or trainer task."""
    own = (pservers if role == "PSERVER" else trainers)[index]
    return {
        "TRAINING_ROLE": role,
        "PADDLE_TRAINING_ROLE": role,
        "PADDLE_PSERVERS_IP_PORT_LIST": ",".join(f"127.0.0.1:{p}" for p in pservers),
        "PADDLE_TRAINER_ENDPOINTS": ",".join(f"127.0.0.1:{p}" for p in trainers),
        "PADDLE_TRAINERS_NUM": str(len(trainers)),
        "PADDLE_TRAINER_ID": str(index),
        "PADDLE_PORT": str(own),
        "POD_IP": "127.0.0.1",
    }


def start_job(start: Start, tmp_path: Path, *trainer_args: str) -> tuple[list[Proc], list[Proc], list[int]]:
    """Trainers first (they must wait for the servers), then the pservers once the trainers wait."""
    ports = free_ports(4)
    pserver_ports, trainer_ports = ports[:2], ports[2:]
    trainers = [
        start(
            f"trainer-{i}",
            [str(TRAIN), "--output", str(tmp_path / f"trainer-{i}.json"), *trainer_args],
            paddle_env("TRAINER", i, pserver_ports, trainer_ports),
        )
        for i in range(2)
    ]
    for trainer in trainers:
        trainer.wait_for_log("waiting for pserver", timeout=30)
    pservers = [
        start(f"pserver-{i}", [str(TRAIN)], paddle_env("PSERVER", i, pserver_ports, trainer_ports)) for i in range(2)
    ]
    return pservers, trainers, pserver_ports


def test_two_pservers_and_two_trainers_learn_the_click_model(start: Start, tmp_path: Path) -> None:
    pservers, trainers, ports = start_job(start, tmp_path)
    for i, trainer in enumerate(trainers):
        assert trainer.wait(timeout=120) == 0, trainer.log()
        log = trainer.log()
        assert f"starting, PADDLE_TRAINER_ID={i} of PADDLE_TRAINERS_NUM=2" in log
        assert f"trainer {i}: epoch 3/3 done" in log
        done = re.search(rf"^trainer {i} done: auc (0\.\d+)$", log, re.MULTILINE)
        assert done, log
        result = json.loads((tmp_path / f"trainer-{i}.json").read_text())
        assert result["auc"] >= 0.7  # a constant click rate scores 0.5
        assert result["logloss"] < result["baseline_logloss"]
        assert float(done.group(1)) == pytest.approx(result["auc"], abs=0.0005)

    # The servers never end on their own: the batch system stops them (TaskCompleted → CompleteJob).
    for i, pserver in enumerate(pservers):
        assert pserver.popen.poll() is None, pserver.log()
        assert f"pserver {i}: listening on 127.0.0.1:{ports[i]}" in pserver.log()
        pserver.popen.send_signal(signal.SIGTERM)
    for i, pserver in enumerate(pservers):
        assert pserver.wait(timeout=30) == 0, pserver.log()
        assert f"pserver {i}: SIGTERM received, stopping" in pserver.log()


def test_a_trainer_fails_when_a_pserver_dies(start: Start, tmp_path: Path) -> None:
    # Many epochs, so the trainers are still training when the server goes (PodFailed → RestartJob).
    pservers, trainers, _ = start_job(start, tmp_path, "--epochs", "1000")
    trainers[0].wait_for_log("epoch 1/1000 batch", timeout=60)
    pservers[1].popen.kill()
    for trainer in trainers:
        assert trainer.wait(timeout=60) == 1, trainer.log()
        assert "error: lost the parameter servers" in trainer.log()


def test_a_trainer_gives_up_when_no_pserver_listens(start: Start) -> None:
    pservers, trainers = free_ports(2), free_ports(1)
    env = paddle_env("TRAINER", 0, pservers, trainers)
    trainer = start("trainer-0", [str(TRAIN), "--wait-timeout", "1"], env)
    assert trainer.wait(timeout=60) == 1
    assert re.search(r"error: pserver 127\.0\.0\.1:\d+ not reachable after \d+ attempts", trainer.log())


def test_a_pserver_not_in_the_server_list_is_a_one_line_error(start: Start) -> None:
    pservers, trainers = free_ports(2), free_ports(2)
    env = {**paddle_env("PSERVER", 0, pservers, trainers), "PADDLE_PORT": str(trainers[0])}
    proc = start("pserver-0", [str(TRAIN)], env)
    assert proc.wait(timeout=60) == 2
    assert proc.log().strip().splitlines() == [
        f"error: POD_IP:PADDLE_PORT 127.0.0.1:{trainers[0]} is not in PADDLE_PSERVERS_IP_PORT_LIST "
        + ",".join(f"127.0.0.1:{p}" for p in pservers)
    ]


def test_the_manifest_is_the_ctr_job_shape() -> None:
    (doc,) = yaml.safe_load_all((EXAMPLES / "paddle-ps-ctr" / "ctr-volcano.yaml").read_text())
    spec = doc["spec"]
    assert (doc["apiVersion"], doc["kind"]) == ("batch.volcano.sh/v1alpha1", "Job")
    assert spec["minAvailable"] == 4
    assert spec["plugins"] == {"paddle": []}
    assert spec["policies"] == [
        {"event": "PodEvicted", "action": "RestartJob"},
        {"event": "PodFailed", "action": "RestartJob"},
    ]
    tasks = {t["name"]: t for t in spec["tasks"]}
    assert {name: t["replicas"] for name, t in tasks.items()} == {"pserver": 2, "trainer": 2}
    assert tasks["trainer"]["policies"] == [{"event": "TaskCompleted", "action": "CompleteJob"}]
    for task in tasks.values():
        pod = task["template"]["spec"]
        assert pod["restartPolicy"] == "OnFailure"
        (container,) = pod["containers"]
        # Run in the manifest's own directory (`caldera apply -f` reads workingDir relative to the file).
        assert (container["command"], container["workingDir"]) == (["python", "train.py"], ".")
        assert (EXAMPLES / "paddle-ps-ctr" / container["command"][1]).is_file()
