"""examples/pytorch-ddp really trains: 3 gloo workers on CPU reach >= 90 % on the digits test set."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from example_processes import EXAMPLES, Start, free_ports

from caldera.testing.waiting import TRAINING_DEADLINE

TRAIN = EXAMPLES / "pytorch-ddp" / "train.py"
WORLD_SIZE = 3

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("sklearn") is None,
    reason="the PyTorch example needs torch and scikit-learn: pip install -e '.[examples]'",
)


def test_three_ddp_workers_train_the_digits_classifier(start: Start, tmp_path: Path) -> None:
    (port,) = free_ports(1)
    # What caldera's pytorch plugin injects: one master (rank 0), WORLD_SIZE counting it.
    workers = [
        start(
            f"worker-{rank}",
            [str(TRAIN), "--output", str(tmp_path / "out" / "result.json")],
            {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(WORLD_SIZE), "RANK": str(rank)},
        )
        for rank in range(WORLD_SIZE)
    ]
    for worker in workers:
        assert worker.wait(timeout=TRAINING_DEADLINE) == 0, worker.log()

    for rank, worker in enumerate(workers):
        assert f"rank {rank} of world_size {WORLD_SIZE} starting on master 127.0.0.1:{port}" in worker.log()
    master_log = workers[0].log()
    assert "epoch 20/20: train loss" in master_log
    assert "epoch" not in workers[1].log()  # only rank 0 reports progress
    final = re.search(r"^final test accuracy: (\d\.\d+)$", master_log, re.MULTILINE)
    assert final, master_log

    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["epochs"] == 20
    assert result["world_size"] == WORLD_SIZE
    assert result["accuracy"] >= 0.90
    assert float(final.group(1)) == pytest.approx(result["accuracy"], abs=0.0005)


def test_an_incomplete_environment_is_a_one_line_error(start: Start) -> None:
    proc = start("worker-1", [str(TRAIN)], {"MASTER_ADDR": "127.0.0.1", "RANK": "1"})
    assert proc.wait(timeout=TRAINING_DEADLINE) == 2
    assert proc.log().strip().splitlines() == ["error: incomplete PyTorch environment, missing MASTER_PORT, WORLD_SIZE"]
