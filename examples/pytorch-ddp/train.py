"""Data-parallel training of a small MLP on scikit-learn's digits, with PyTorch DDP on CPU.

Every worker runs this same script. The rendezvous comes from the environment that a
PyTorchJob-style launcher (caldera's `pytorch` plugin, Kubeflow, torchrun) sets:

    MASTER_ADDR, MASTER_PORT   where rank 0 listens for the rendezvous
    WORLD_SIZE                 how many workers take part (the master included)
    RANK                       this worker's rank, 0 being the master

Run alone (none of the four variables set) it trains as a world of one. The data set is
the 1,797 8x8 images of handwritten digits shipped inside scikit-learn (no download); the
split and the initial weights are seeded, so every run and every worker sees the same data.

Rank 0 prints the per-epoch loss and accuracy, then `final test accuracy: 0.9xx`, and
with `--output FILE` writes a JSON result there (by default it writes no file: run from
the repository, it leaves nothing in it).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import socket
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import NoReturn

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RENDEZVOUS_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")


@dataclass(frozen=True)
class Rendezvous:
    master_addr: str
    master_port: int
    world_size: int
    rank: int


def log(message: str) -> None:
    # Flushed at once: under a batch system stdout is a file, and block buffering
    # would hide progress (and lose the tail if the worker is killed).
    print(message, flush=True)


def fail(message: str) -> NoReturn:
    """A bad environment: one line on stderr and exit code 2, before any rendezvous."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def rendezvous_from_env() -> Rendezvous:
    """Read the PyTorch rendezvous variables, or fall back to a world of one."""
    present = [name for name in RENDEZVOUS_VARIABLES if os.environ.get(name)]
    if not present:
        # Standalone: a world of one on this machine.
        for name, value in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", str(free_port()))):
            os.environ[name] = value
        os.environ["WORLD_SIZE"], os.environ["RANK"] = "1", "0"
    elif len(present) != len(RENDEZVOUS_VARIABLES):
        missing = sorted(set(RENDEZVOUS_VARIABLES) - set(present))
        fail(f"incomplete PyTorch environment, missing {', '.join(missing)}")
    try:
        rdzv = Rendezvous(
            master_addr=os.environ["MASTER_ADDR"],
            master_port=int(os.environ["MASTER_PORT"]),
            world_size=int(os.environ["WORLD_SIZE"]),
            rank=int(os.environ["RANK"]),
        )
    except ValueError as exc:
        fail(f"bad PyTorch environment: {exc}")
    if not 0 <= rdzv.rank < rdzv.world_size:
        fail(f"RANK={rdzv.rank} is outside WORLD_SIZE={rdzv.world_size}")
    return rdzv


def load_data(seed: int) -> tuple[TensorDataset, TensorDataset]:
    """Digits scaled to [0, 1], split 75/25, stratified, the same on every worker."""
    digits = load_digits()
    features = digits.data.astype("float32") / 16.0
    x_train, x_test, y_train, y_test = train_test_split(
        features, digits.target, test_size=0.25, random_state=seed, stratify=digits.target
    )
    train = TensorDataset(torch.from_numpy(x_train), torch.from_numpy(y_train).long())
    test = TensorDataset(torch.from_numpy(x_test), torch.from_numpy(y_test).long())
    return train, test


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def all_reduce_sums(*values: float) -> list[float]:
    """Sum a few numbers over every worker (one small all-reduce)."""
    tensor = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor.tolist()


def evaluate(model: nn.Module, data: TensorDataset, rdzv: Rendezvous) -> tuple[float, float]:
    """Loss and accuracy on `data`: each worker scores its own slice, the sums are all-reduced."""
    x, y = data.tensors
    x, y = x[rdzv.rank :: rdzv.world_size], y[rdzv.rank :: rdzv.world_size]
    model.eval()
    with torch.no_grad():
        logits = model(x)
        loss_sum = nn.functional.cross_entropy(logits, y, reduction="sum").item()
        correct = (logits.argmax(dim=1) == y).sum().item()
    model.train()
    loss_sum, correct, count = all_reduce_sums(loss_sum, correct, len(y))
    return loss_sum / count, correct / count


def train(args: argparse.Namespace, rdzv: Rendezvous) -> dict[str, float | int]:
    """Train for args.epochs epochs; every worker returns the same final test metrics."""
    train_set, test_set = load_data(args.seed)
    # Each worker trains on its own 1/WORLD_SIZE of the shuffled training set per epoch.
    sampler: DistributedSampler[tuple[torch.Tensor, ...]] = DistributedSampler(
        train_set, num_replicas=rdzv.world_size, rank=rdzv.rank, seed=args.seed
    )
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    model = DistributedDataParallel(make_model())  # averages gradients over the workers
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    if rdzv.rank == 0:
        log(f"training on {len(train_set)} images ({len(sampler)} per worker), testing on {len(test_set)}")
    test_loss = test_acc = 0.0
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)  # a different shuffle each epoch, the same on every worker
        loss_sum, seen = 0.0, 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()  # DDP all-reduces (averages) the gradients here
            optimizer.step()
            loss_sum += loss.item() * len(y)
            seen += len(y)
        loss_sum, seen = all_reduce_sums(loss_sum, seen)
        test_loss, test_acc = evaluate(model, test_set, rdzv)
        if rdzv.rank == 0:
            log(
                f"epoch {epoch:2d}/{args.epochs}: train loss {loss_sum / seen:.4f}"
                f"  test loss {test_loss:.4f}  test accuracy {test_acc:.3f}"
            )
    return {
        "accuracy": test_acc,
        "test_loss": test_loss,
        "epochs": args.epochs,
        "world_size": rdzv.world_size,
        "train_size": len(train_set),
        "test_size": len(test_set),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32, help="per worker")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for the rendezvous and each collective")
    parser.add_argument("--output", type=Path, default=None, help="JSON result written by rank 0 (default: none)")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")

    torch.set_num_threads(1)  # several workers share a few cores: no intra-op threads
    torch.manual_seed(args.seed)  # same initial weights everywhere (DDP also broadcasts rank 0's)
    rdzv = rendezvous_from_env()
    log(f"rank {rdzv.rank} of world_size {rdzv.world_size} starting on master {rdzv.master_addr}:{rdzv.master_port}")

    # env:// reads MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK; the timeout bounds the
    # wait for the other workers, so a job missing a worker fails instead of hanging.
    dist.init_process_group(backend="gloo", init_method="env://", timeout=timedelta(seconds=args.timeout))
    try:
        result = train(args, rdzv)
        dist.barrier()  # nobody tears the group down while another worker still uses it
    finally:
        # The DDP model (gone with train()'s frame; collect any cycle) holds the process
        # group: free it first, so the group is destroyed here and not during interpreter
        # exit, where gloo's threads can abort the process ("terminate called without an
        # active exception", exit code 134).
        gc.collect()
        dist.destroy_process_group()

    if rdzv.rank == 0:
        log(f"final test accuracy: {result['accuracy']:.3f}")
        if args.output is not None:
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(json.dumps(result, indent=2) + "\n")
            log(f"wrote {args.output}")
    log(f"rank {rdzv.rank} done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
