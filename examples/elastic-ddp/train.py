"""Elastic data-parallel training of the digits classifier: resumes from its checkpoint after any restart.

The model and optimizer are those of examples/pytorch-ddp (a small MLP on scikit-learn's
digits, DDP over gloo on CPU, Adam); the split is drawn from the seed here. What makes it
elastic:

- It reads the round from the environment an elastic launcher sets (`caldera launch`,
  torchrun): RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT. With
  none of them set it trains alone as a world of one.
- Every rank loads `<checkpoint>/checkpoint.pt` at start (caldera.elastic.load_checkpoint)
  and resumes at the saved epoch with the saved model, optimizer and RNG state; the ranks
  check that they all loaded the same checkpoint (the directory must be shared).
- Rank 0 saves a checkpoint at the end of every epoch, atomically, so a crash at any
  moment leaves the last complete one.
- The run does not depend on the world size, so a run resumed on 3 workers reaches what
  the uninterrupted run on 2 reaches: the shuffle of epoch e is a permutation drawn from
  (seed, e) alone; each step takes the next `--batch-size` images of it (the *global*
  batch, the same whatever the world size; the incomplete last batch is dropped) and
  rank r takes every W-th of them; each rank's loss is scaled by W / batch so DDP's
  gradient average is the mean over the whole global batch. Only the order of
  floating-point additions changes with W.

It logs, on every rank, lines that tests and benchmarks parse (time is Unix seconds):

    start world=3 rank=0 restart=1 resume_epoch=3 time=...   after the rendezvous and the load
    step world=3 rank=0 restart=1 epoch=4 step=64 time=...   the first step done after a (re)start
    epoch=4 world=3 rank=0 restart=1 loss=0.1234 time=...    each epoch (loss: global training mean)

and at the end, on rank 0, `test accuracy 0.973`. Bad options or environment: one line on
stderr, exit code 2. `--stop-file PATH` ends the run early, after the epoch during which PATH
appeared (for a run whose end a test or an operator decides).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import importlib.util
import os
import re
import socket
import sys
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from caldera.elastic import (
    Checkpoint,
    CheckpointError,
    ElasticEnvError,
    World,
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
    world,
)
from caldera.utils.clock import SystemClock

CLOCK = SystemClock()
CHECKPOINT_FILE = "checkpoint.pt"


@dataclass(frozen=True)
class Data:
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def log(message: str) -> None:
    # Flushed at once: under a launcher stdout is a file, and the lines are read while it runs.
    print(message, flush=True)


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def now() -> str:
    return f"{CLOCK.now():.3f}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def read_world() -> World:
    """The launcher's round, or a world of one when no launcher set anything."""
    if not any(os.environ.get(name) for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")):
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", WORLD_SIZE="1")
    missing = [name for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if not os.environ.get(name)]
    if missing:
        fail(f"incomplete PyTorch environment, missing {', '.join(missing)}")
    if not os.environ["MASTER_PORT"].isdigit():
        fail(f"MASTER_PORT={os.environ['MASTER_PORT']!r} is not a port number")
    try:
        return world()
    except ElasticEnvError as exc:
        fail(str(exc))


def digits() -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's digits (1,797 8x8 images): read from the file inside the package.

    Reading `sklearn/datasets/data/digits.csv.gz` directly spares every (re)start the two
    seconds of CPU `import sklearn` takes (SciPy): a restart is mostly process start-up.
    Each line is 64 pixel values (0..16) and the label.
    """
    spec = importlib.util.find_spec("sklearn")  # finds the package without importing it
    for base in (spec.submodule_search_locations or []) if spec else []:
        path = Path(base, "datasets", "data", "digits.csv.gz")
        if path.exists():
            with gzip.open(path, "rt") as file:
                rows = torch.tensor([[int(v) for v in line.split(",")] for line in file if line.strip()])
            return rows[:, :64].float() / 16.0, rows[:, 64].long()
    fail("scikit-learn's digits data set was not found: pip install scikit-learn")


def load_data(seed: int) -> Data:
    """Digits scaled to [0, 1], split 75/25 stratified by a generator seeded with `seed`: the same on every rank."""
    features, labels = digits()
    generator = torch.Generator().manual_seed(seed)
    test_parts = []
    for label in range(10):
        members = (labels == label).nonzero().flatten()
        members = members[torch.randperm(len(members), generator=generator)]
        test_parts.append(members[: round(len(members) * 0.25)])
    test = torch.cat(test_parts).sort().values
    train = torch.ones(len(labels), dtype=torch.bool)
    train[test] = False
    return Data(features[train], labels[train], features[test], labels[test])


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def epoch_order(size: int, seed: int, epoch: int) -> torch.Tensor:
    """The shuffle of one epoch: a function of (seed, epoch) only, so a resumed run sees the same order."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    return torch.randperm(size, generator=generator)


def all_reduce_sums(*values: float) -> list[float]:
    tensor = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return [float(v) for v in tensor.tolist()]


def agree_on(checkpoint: Checkpoint | None, here: World, directory: Path) -> None:
    """Every rank must have loaded the same checkpoint: a directory only some ranks see would split the run."""
    mine = torch.tensor([-1, -1] if checkpoint is None else [checkpoint.epoch, checkpoint.step], dtype=torch.int64)
    views = [torch.zeros(2, dtype=torch.int64) for _ in range(here.world_size)]
    dist.all_gather(views, mine)
    if any(not torch.equal(view, views[0]) for view in views):
        seen = ", ".join(f"rank {r}: {'none' if int(v[0]) < 0 else f'epoch {int(v[0])}'}" for r, v in enumerate(views))
        fail(
            f"the ranks loaded different checkpoints from {directory} ({seen}): it must be a directory all ranks share"
        )


def evaluate(model: nn.Module, data: Data, here: World) -> float:
    """Test accuracy: each rank scores every W-th test image, the counts are all-reduced."""
    x, y = data.x_test[here.rank :: here.world_size], data.y_test[here.rank :: here.world_size]
    model.eval()
    with torch.no_grad():
        correct = float((model(x).argmax(dim=1) == y).sum().item())
    model.train()
    correct, count = all_reduce_sums(correct, len(y))
    return correct / count


def train(args: argparse.Namespace, here: World, checkpoint: Checkpoint | None) -> float:
    """Train from the checkpoint's epoch to args.epochs; returns the test accuracy (the same on every rank)."""
    data = load_data(args.seed)
    torch.manual_seed(args.seed)  # the initial weights of a fresh start, the same on every rank
    net = make_model()
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)
    first_epoch, step = 0, 0
    if checkpoint is not None:
        missing = sorted({"model", "optimizer", "rng", "seed"} - checkpoint.state.keys())
        if missing:
            fail(f"{checkpoint.path} was not saved by this script: its state has no {', '.join(missing)}")
        if checkpoint.state["seed"] != args.seed:
            fail(f"{checkpoint.path} was saved with --seed {checkpoint.state['seed']}, this run has --seed {args.seed}")
        net.load_state_dict(checkpoint.state["model"])
        optimizer.load_state_dict(checkpoint.state["optimizer"])
        set_rng_state(checkpoint.state["rng"])
        first_epoch, step = checkpoint.epoch, checkpoint.step
    model = DistributedDataParallel(net)  # averages the gradients over the ranks of this round
    log(
        f"start world={here.world_size} rank={here.rank} restart={here.restart_count}"
        f" resume_epoch={first_epoch} time={now()}"
    )
    batch, ranks = args.batch_size, here.world_size
    steps_per_epoch = len(data.y_train) // batch
    first_step_logged = False
    for epoch in range(first_epoch, args.epochs):
        order = epoch_order(len(data.y_train), args.seed, epoch)
        loss_sum = 0.0
        for b in range(steps_per_epoch):
            mine = order[b * batch : (b + 1) * batch][here.rank :: ranks]
            optimizer.zero_grad()
            # Sum over my share of the global batch, times W / batch: DDP divides the summed
            # gradients by W, which leaves the mean gradient of the whole global batch.
            loss = nn.functional.cross_entropy(model(data.x_train[mine]), data.y_train[mine], reduction="sum")
            (loss * (ranks / batch)).backward()
            optimizer.step()
            step += 1
            loss_sum += loss.item()
            if not first_step_logged:
                first_step_logged = True
                log(
                    f"step world={ranks} rank={here.rank} restart={here.restart_count}"
                    f" epoch={epoch + 1} step={step} time={now()}"
                )
            if args.step_delay > 0:
                CLOCK.sleep(args.step_delay)
        # The stop file's presence rides on the loss all-reduce, so every rank stops after the same epoch.
        total, stop = all_reduce_sums(loss_sum, float(args.stop_file is not None and args.stop_file.exists()))
        state: dict[str, Any] = {
            "model": net.state_dict(),
            "optimizer": optimizer.state_dict(),
            "rng": rng_state(),
            "seed": args.seed,
        }
        save_checkpoint(args.checkpoint / CHECKPOINT_FILE, state, epoch=epoch + 1, step=step, rank=here.rank)
        log(
            f"epoch={epoch + 1} world={ranks} rank={here.rank} restart={here.restart_count}"
            f" loss={total / (steps_per_epoch * batch):.4f} time={now()}"
        )
        if stop > 0:
            break
    return evaluate(model, data, here)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch, whatever the world size")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help=f"directory of {CHECKPOINT_FILE}, shared by all ranks"
        " (default: <temporary directory>/caldera-elastic-ddp/<TORCHELASTIC_RUN_ID>, or .../default without"
        " a run id: outside the working directory, so a run from the repository writes nothing into it)",
    )
    parser.add_argument("--step-delay", type=float, default=0.0, help="seconds to sleep after each step")
    parser.add_argument(
        "--stop-file",
        type=Path,
        default=None,
        help="end training early, after the epoch during which this file appeared (seen by any rank)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for the rendezvous and each collective")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")
    if args.batch_size < 1 or args.step_delay < 0 or args.timeout <= 0:
        parser.error("--batch-size must be at least 1, --step-delay at least 0 and --timeout positive")
    if args.checkpoint is None:
        # One directory per run of the job: its restarts share it, a new submission starts afresh.
        run_id = re.sub(r"[^A-Za-z0-9._-]", "_", os.environ.get("TORCHELASTIC_RUN_ID", "")).lstrip(".")
        args.checkpoint = Path(tempfile.gettempdir(), "caldera-elastic-ddp", run_id or "default")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)  # several ranks share a few cores: no intra-op threads
    here = read_world()
    if here.world_size > args.batch_size:
        fail(
            f"WORLD_SIZE={here.world_size} is larger than --batch-size {args.batch_size}: some ranks would get no data"
        )
    try:
        checkpoint = load_checkpoint(args.checkpoint / CHECKPOINT_FILE)  # before the rendezvous: a bad file fails fast
    except CheckpointError as exc:
        fail(str(exc))
    # A bounded timeout: a rank whose peer vanished fails instead of hanging, and the launcher restarts the round.
    dist.init_process_group(backend="gloo", init_method="env://", timeout=timedelta(seconds=args.timeout))
    try:
        agree_on(checkpoint, here, args.checkpoint)
        accuracy = train(args, here, checkpoint)
        dist.barrier()  # nobody tears the group down while another rank still uses it
    finally:
        gc.collect()  # free the DDP model (it holds the group) before destroying the group: see pytorch-ddp
        dist.destroy_process_group()
    if here.rank == 0:
        log(f"test accuracy {accuracy:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
