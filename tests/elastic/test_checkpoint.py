"""save_checkpoint / load_checkpoint: rank 0 writes atomically, every rank reads, a damaged file is an error."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from caldera.elastic import CheckpointError, load_checkpoint, save_checkpoint
from caldera.elastic.checkpoint import FORMAT

torch = pytest.importorskip("torch")


def temps(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


class Unpicklable:
    """A value whose pickling fails half-way through a save, as a full disk or a bug in user state would."""

    def __reduce__(self) -> tuple[object, ...]:
        raise RuntimeError("no space left on device (simulated)")


def test_a_round_trip_keeps_tensors_epoch_and_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "3")
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 4)).sum().backward()
    optimizer.step()
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "ints": torch.arange(5, dtype=torch.int64),
        "nested": {"half": torch.tensor([0.5, 1.5], dtype=torch.float16), "name": "digits", "lr": 0.01},
    }
    path = tmp_path / "ckpt" / "last.pt"  # the directory is created

    assert save_checkpoint(path, state, epoch=3, step=63) is True
    loaded = load_checkpoint(path)

    assert loaded is not None
    assert (loaded.path, loaded.epoch, loaded.step, loaded.world_size) == (path, 3, 63, 3)
    for name, tensor in model.state_dict().items():
        assert torch.equal(loaded.state["model"][name], tensor)
    assert loaded.state["optimizer"]["state"][0]["step"] == optimizer.state_dict()["state"][0]["step"]
    assert torch.equal(loaded.state["ints"], state["ints"])
    assert loaded.state["nested"]["half"].dtype == torch.float16
    assert loaded.state["nested"]["name"] == "digits"
    assert temps(path.parent) == []


def test_a_new_save_replaces_the_old_one(tmp_path: Path) -> None:
    path = tmp_path / "last.pt"
    save_checkpoint(path, {"w": torch.zeros(2)}, epoch=1, step=10)
    save_checkpoint(path, {"w": torch.ones(2)}, epoch=2, step=20)
    loaded = load_checkpoint(path)
    assert loaded is not None
    assert (loaded.epoch, loaded.step) == (2, 20)
    assert torch.equal(loaded.state["w"], torch.ones(2))


def test_no_checkpoint_yet_is_none(tmp_path: Path) -> None:
    assert load_checkpoint(tmp_path / "last.pt") is None
    assert load_checkpoint(tmp_path / "missing-dir" / "last.pt") is None


@pytest.mark.parametrize(
    ("rank_env", "rank_arg"), [("1", None), (None, 2), ("0", 1)], ids=["env", "argument", "argument-wins"]
)
def test_only_rank_0_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rank_env: str | None, rank_arg: int | None
) -> None:
    if rank_env is not None:
        monkeypatch.setenv("RANK", rank_env)
        monkeypatch.setenv("WORLD_SIZE", "4")
    directory = tmp_path / "ckpt"
    assert save_checkpoint(directory / "last.pt", {"w": torch.ones(1)}, epoch=1, step=1, rank=rank_arg) is False
    assert not directory.exists()  # not even the directory, nor a temp file


def test_rank_0_by_argument_writes_whatever_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert save_checkpoint(tmp_path / "last.pt", {}, epoch=0, step=0, rank=0) is True
    assert load_checkpoint(tmp_path / "last.pt") is not None


def test_a_failed_write_leaves_the_previous_checkpoint_and_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "last.pt"
    save_checkpoint(path, {"w": torch.zeros(3)}, epoch=1, step=10)
    before = path.read_bytes()

    with pytest.raises(RuntimeError, match="no space left on device"):
        save_checkpoint(path, {"w": torch.ones(3), "bad": Unpicklable()}, epoch=2, step=20)

    assert path.read_bytes() == before
    loaded = load_checkpoint(path)
    assert loaded is not None
    assert (loaded.epoch, loaded.step) == (1, 10)
    assert temps(tmp_path) == []


# A process killed (SIGKILL) in the middle of its second save: nothing gets to clean up.
CRASHING_SAVE = """
import os, signal, sys, torch
from caldera.elastic import save_checkpoint

class KillMe:
    def __reduce__(self):
        os.kill(os.getpid(), signal.SIGKILL)

save_checkpoint(sys.argv[1], {"w": torch.zeros(3)}, epoch=1, step=10)
save_checkpoint(sys.argv[1], {"w": torch.ones(3), "kill": KillMe()}, epoch=2, step=20)
"""


def test_a_process_killed_mid_save_leaves_the_previous_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "last.pt"
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_SAVE, str(path)], check=False, capture_output=True, timeout=120
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    (leftover,) = temps(tmp_path)  # the crashed save's temp file is still there...
    assert leftover.startswith(".last.pt.")

    loaded = load_checkpoint(path)  # ...and ignored: the previous checkpoint is what is read
    assert loaded is not None
    assert (loaded.epoch, loaded.step) == (1, 10)
    assert torch.equal(loaded.state["w"], torch.zeros(3))

    save_checkpoint(path, {"w": torch.ones(3)}, epoch=2, step=20)  # the next save removes it
    assert temps(tmp_path) == []


def test_a_leftover_temp_file_alone_is_no_checkpoint(tmp_path: Path) -> None:
    (tmp_path / ".last.pt.abc123.tmp").write_bytes(b"PK\x03\x04 half a zip")
    assert load_checkpoint(tmp_path / "last.pt") is None


def _truncated(path: Path) -> None:
    save_checkpoint(path, {"w": torch.randn(1000)}, epoch=1, step=1)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _foreign(path: Path) -> None:
    torch.save({"model": {"w": torch.ones(1)}}, path)


def _bad_epoch(path: Path) -> None:
    torch.save({"format": FORMAT, "epoch": -1, "step": 0, "world_size": 1, "state": {}}, path)


def _bad_state(path: Path) -> None:
    torch.save({"format": FORMAT, "epoch": 1, "step": 0, "world_size": 1, "state": [1, 2]}, path)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_truncated, "not a readable checkpoint (truncated or corrupt?)"),
        (lambda p: p.write_bytes(b""), "not a readable checkpoint (truncated or corrupt?)"),
        (
            lambda p: p.write_bytes(b"this is not a checkpoint\n" * 10),
            "not a readable checkpoint (truncated or corrupt?)",
        ),
        (_foreign, f"not a caldera.elastic checkpoint (format None, expected {FORMAT!r})"),
        (_bad_epoch, "field 'epoch' must be a non-negative integer, found -1"),
        (_bad_state, "field 'state' must be a dict, found list"),
        (lambda p: p.mkdir(), "is a directory, expected a checkpoint file"),
    ],
    ids=["truncated", "empty", "garbage", "foreign-torch-file", "bad-epoch", "bad-state", "directory"],
)
def test_a_damaged_checkpoint_is_a_clear_error(tmp_path: Path, damage: object, message: str) -> None:
    path = tmp_path / "last.pt"
    assert callable(damage)
    damage(path)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(path)
    assert str(caught.value).startswith(f"{path}: {message}")
    assert "\n" not in str(caught.value)


class Custom:
    """A plain Python object in the state: not something torch's safe loader accepts."""

    def __init__(self, value: int) -> None:
        self.value = value


def test_an_object_the_safe_loader_refuses_is_named_and_loads_when_trusted(tmp_path: Path) -> None:
    path = tmp_path / "last.pt"
    save_checkpoint(path, {"custom": Custom(5)}, epoch=1, step=1)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(path)
    assert str(caught.value).startswith(
        f"{path}: holds objects torch's safe loader refuses; if you trust the file, load it with weights_only=False: "
    )
    trusted = load_checkpoint(path, weights_only=False)
    assert trusted is not None
    assert trusted.state["custom"].value == 5


@pytest.mark.parametrize(
    ("epoch", "step", "message"),
    [(-1, 0, "epoch must be a non-negative integer, got -1"), (1, 2.5, "step must be a non-negative integer, got 2.5")],
    ids=["negative-epoch", "float-step"],
)
def test_bad_epoch_or_step_is_refused_before_writing(tmp_path: Path, epoch: int, step: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        save_checkpoint(tmp_path / "last.pt", {}, epoch=epoch, step=step)
    assert list(tmp_path.iterdir()) == []
