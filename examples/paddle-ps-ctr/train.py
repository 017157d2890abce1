"""The CTR demo of "PaddlePaddle on Volcano", re-done with numpy and the standard library.

Every pod of the job runs this script; the Paddle parameter-server environment says
which part it plays (see paddle_env.py):

    TRAINING_ROLE=PSERVER   serve one shard of a hashed logistic-regression CTR model
                            on POD_IP:PADDLE_PORT until stopped (pserver.py)
    TRAINING_ROLE=TRAINER   train on shard PADDLE_TRAINER_ID of a synthetic click log
                            against all the servers, then evaluate (trainer.py)

Usage (from any directory):

    python examples/paddle-ps-ctr/train.py [--epochs 3] [--batch-size 256] [--output FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# The modules beside this script leave no __pycache__ in the repository (caldera's pods keep theirs in its home).
sys.dont_write_bytecode = True

import clicklog  # noqa: E402
from paddle_env import EnvError, read_paddle_env  # noqa: E402
from pserver import run_pserver  # noqa: E402
from trainer import TrainerConfig, run_trainer  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Parameter-server CTR training (a pserver or a trainer).")
    parser.add_argument("--hash-space", type=int, default=clicklog.DEFAULT_HASH_SPACE, help="weight slots in all")
    parser.add_argument("--lr", type=float, default=0.1, help="Adagrad learning rate (applied by the pservers)")
    parser.add_argument("--epochs", type=int, default=3, help="passes over each trainer's shard")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--train-rows", type=int, default=200_000, help="impressions over all trainers")
    parser.add_argument("--test-rows", type=int, default=20_000, help="held-out impressions")
    parser.add_argument("--wait-timeout", type=float, default=120.0, help="seconds a trainer waits for the pservers")
    parser.add_argument("--output", type=Path, help="JSON result file written by a trainer")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or args.hash_space < 1:
        parser.error("--epochs, --batch-size and --hash-space must be positive")

    try:
        env = read_paddle_env(os.environ)
    except EnvError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    if os.environ.get("POD_NAME"):  # set from the manifest's fieldRef (metadata.name), for the logs
        who = f"pserver {env.pserver_id}" if env.role == "PSERVER" else f"trainer {env.trainer_id}"
        namespace = os.environ.get("NAMESPACE", "")
        print(f"{who}: pod {os.environ['POD_NAME']}{f' in namespace {namespace}' if namespace else ''}", flush=True)
    if env.role == "PSERVER":
        return run_pserver(env, hash_space=args.hash_space, lr=args.lr)
    config = TrainerConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        train_rows=args.train_rows,
        test_rows=args.test_rows,
        hash_space=args.hash_space,
        wait_timeout=args.wait_timeout,
        output=args.output,
    )
    return run_trainer(env, config)


if __name__ == "__main__":
    sys.exit(main())
