"""examples/elastic-ddp resumes from its checkpoint after a restart, at the same or another world size.

The ranks are started by hand with torch's variables, as `caldera launch` starts them,
without the launcher: a restart is a new round of processes with
TORCHELASTIC_RESTART_COUNT=1 and the same checkpoint directory. A resumed run must end
within one point of accuracy of the uninterrupted run with the same seed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from caldera.elastic import load_checkpoint, save_checkpoint

from .workers import Pool, Worker

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("sklearn") is None,
    reason="the elastic example needs torch and scikit-learn: pip install -e '.[examples]'",
)

EPOCHS = 6
STEPS_PER_EPOCH = 1347 // 64  # the training split of digits, global batch 64


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[Pool]:
    workers = Pool(tmp_path)
    try:
        yield workers
    finally:
        workers.close()


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Worker:
    """Rank 0 of an uninterrupted run on 2 workers (seed 0)."""
    workers = Pool(tmp_path_factory.mktemp("baseline"))
    try:
        rank0, _ = workers.run(2, name="uninterrupted", args=["--epochs", str(EPOCHS), "--checkpoint", "ckpt"])
        return rank0
    finally:
        workers.close()


def test_the_uninterrupted_run_learns(baseline: Worker) -> None:
    assert "start world=2 rank=0 restart=0 resume_epoch=0 time=" in baseline.log()
    assert "step world=2 rank=0 restart=0 epoch=1 step=1 time=" in baseline.log()
    assert sorted(baseline.epoch_losses()) == list(range(1, EPOCHS + 1))
    assert baseline.accuracy() >= 0.93


def test_a_restarted_round_resumes_at_the_saved_epoch_and_repeats_the_uninterrupted_run(
    pool: Pool, baseline: Worker
) -> None:
    first = pool.run(2, name="first", args=["--epochs", "2", "--checkpoint", "ckpt"])
    assert "epoch=2 world=2 rank=0 restart=0 loss=" in first[0].log()

    second = pool.run(2, name="second", restart=1, args=["--epochs", str(EPOCHS), "--checkpoint", "ckpt"])

    for worker in second:
        assert f"start world=2 rank={worker.rank} restart=1 resume_epoch=2 time=" in worker.log()
        assert f"step world=2 rank={worker.rank} restart=1 epoch=3 step={2 * STEPS_PER_EPOCH + 1} time=" in worker.log()
        assert sorted(worker.epoch_losses()) == list(range(3, EPOCHS + 1))
    # Same seed, same world size: the resumed epochs are the uninterrupted run's, loss for loss.
    resumed = first[0].epoch_losses() | second[0].epoch_losses()
    assert resumed == baseline.epoch_losses()
    assert second[0].accuracy() == pytest.approx(baseline.accuracy(), abs=0.01)


def test_a_run_killed_mid_training_resumes_on_three_workers(pool: Pool, baseline: Worker) -> None:
    args = ["--epochs", str(EPOCHS), "--checkpoint", "ckpt"]
    first = pool.start(2, name="killed", args=[*args, "--step-delay", "0.02"])
    pool.wait_for_line(first[0], "epoch=2 world=2 rank=0 restart=0")
    for worker in first:
        worker.popen.kill()  # SIGKILL: no chance to clean up, as when a node dies
        worker.wait()
    saved = load_checkpoint(pool.directory / "ckpt" / "checkpoint.pt")
    assert saved is not None
    assert 2 <= saved.epoch < EPOCHS, "the first round was to be killed mid-training"
    assert saved.world_size == 2

    second = pool.run(3, name="resumed", restart=1, args=args)

    for worker in second:
        log = worker.log()
        assert f"start world=3 rank={worker.rank} restart=1 resume_epoch={saved.epoch} time=" in log
        assert f"step world=3 rank={worker.rank} restart=1 epoch={saved.epoch + 1} step={saved.step + 1} time=" in log
        assert sorted(worker.epoch_losses()) == list(range(saved.epoch + 1, EPOCHS + 1))
    assert second[0].accuracy() == pytest.approx(baseline.accuracy(), abs=0.01)


def test_ranks_that_load_different_checkpoints_stop_with_a_clear_error(pool: Pool) -> None:
    save_checkpoint(pool.directory / "rank0-only" / "checkpoint.pt", {}, epoch=2, step=42)
    # Each rank pointed at its own directory (as pods with private working directories would be).
    workers = pool.start(
        2, name="unshared", args=[], rank_args=[["--checkpoint", "rank0-only"], ["--checkpoint", "rank1-only"]]
    )
    for worker in workers:
        assert worker.wait() == 2, worker.log()
        assert worker.log().splitlines() == [
            "error: the ranks loaded different checkpoints from "
            f"{['rank0-only', 'rank1-only'][worker.rank]} (rank 0: epoch 2, rank 1: none): "
            "it must be a directory all ranks share"
        ]


def test_a_corrupt_checkpoint_is_a_one_line_error(pool: Pool) -> None:
    path = pool.directory / "ckpt" / "checkpoint.pt"
    path.parent.mkdir()
    path.write_bytes(b"PK\x03\x04 the first bytes of a zip, then nothing")
    (worker,) = pool.start(1, name="corrupt", args=["--checkpoint", "ckpt"])
    assert worker.wait() == 2
    (line,) = worker.log().splitlines()
    assert line.startswith(
        f"error: {Path('ckpt') / 'checkpoint.pt'}: not a readable checkpoint (truncated or corrupt?): "
    )
