"""A trainer: reads its shard of the click log, trains against the parameter servers, evaluates.

For every mini-batch the trainer pulls the current weights of the batch's keys from the
servers that own them, computes the logistic loss's gradient, and pushes the gradient
back; it never waits for the other trainers (asynchronous SGD). At the end it pulls the
final weights of the held-out set's keys and reports AUC and log-loss, next to those of
the trivial baseline (a constant click rate: AUC 0.5) and of the hidden true model.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import clicklog
import numpy as np
import wire
from paddle_env import PaddleEnv, split_endpoint

Log = Callable[[str], None]


@dataclass(frozen=True)
class TrainerConfig:
    epochs: int
    batch_size: int
    train_rows: int  # over all trainers
    test_rows: int
    hash_space: int
    wait_timeout: float  # seconds to wait for the parameter servers to accept connections
    output: Path | None


class PServerError(RuntimeError):
    """A parameter server is unreachable, or refused a request."""


def _monotonic() -> float:
    return time.monotonic()  # noqa: TID251 (examples stand alone: no caldera clock here)


def _pause(seconds: float) -> None:
    time.sleep(seconds)  # noqa: TID251 (a retry back-off in user code, not a test)


def connect(endpoint: str, deadline: float, log: Log) -> socket.socket:
    """Connect to a parameter server, retrying until it listens or the deadline passes.

    The servers and the trainers are started together (one gang), so a trainer usually
    comes up before its servers listen: "connection refused" just means "not yet".
    """
    host, port = split_endpoint(endpoint)
    attempts = 0
    while True:
        attempts += 1
        try:
            sock = socket.create_connection((host, port), timeout=5.0)
        except OSError as exc:
            if _monotonic() >= deadline:
                raise PServerError(f"pserver {endpoint} not reachable after {attempts} attempts: {exc}") from None
            if attempts == 1:
                log(f"waiting for pserver {endpoint} ({exc.strerror or exc})")
            _pause(min(0.05 * attempts, 0.5))
            continue
        wire.configure(sock)
        sock.settimeout(60.0)  # a server that stops answering fails the trainer instead of hanging it
        return sock


class ShardedModel:
    """The client side of the sharded weights: routes each key to the server that owns it."""

    def __init__(self, socks: list[socket.socket], endpoints: tuple[str, ...]) -> None:
        self.socks, self.endpoints = socks, endpoints

    def _call_all(self, requests: dict[int, tuple[dict[str, object], list[np.ndarray]]]) -> dict[int, list[np.ndarray]]:
        # Send every request first, then collect the replies: the servers work in parallel.
        for server, (meta, arrays) in requests.items():
            wire.send_message(self.socks[server], meta, *arrays)
        replies = {}
        for server in requests:
            message = wire.recv_message(self.socks[server])
            if message is None:
                raise PServerError(f"pserver {self.endpoints[server]} closed the connection")
            meta, arrays = message
            if "error" in meta:
                raise PServerError(f"pserver {self.endpoints[server]}: {meta['error']}")
            replies[server] = arrays
        return replies

    def _by_server(self, keys: np.ndarray) -> dict[int, np.ndarray]:
        owner = keys % np.uint64(len(self.socks))
        masks = {s: owner == s for s in range(len(self.socks))}
        return {s: m for s, m in masks.items() if m.any()}

    def hello(self) -> list[dict[str, object]]:
        answers = []
        for sock in self.socks:
            wire.send_message(sock, {"op": "hello"})
            message = wire.recv_message(sock)
            if message is None:
                raise PServerError("a pserver closed the connection during hello")
            answers.append(message[0])
        return answers

    def pull(self, keys: np.ndarray) -> np.ndarray:
        masks = self._by_server(keys)
        replies = self._call_all({s: ({"op": "pull"}, [keys[m]]) for s, m in masks.items()})
        weights = np.empty(len(keys), dtype=np.float32)
        for s, m in masks.items():
            weights[m] = replies[s][0]
        return weights

    def push(self, keys: np.ndarray, grads: np.ndarray) -> None:
        masks = self._by_server(keys)
        self._call_all({s: ({"op": "push"}, [keys[m], grads[m].astype(np.float32)]) for s, m in masks.items()})

    def close(self) -> None:
        for sock in self.socks:
            sock.close()


def _sigmoid(z: np.ndarray) -> np.ndarray:
    p: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))
    return p


def train_step(model: ShardedModel, keys: np.ndarray, clicks: np.ndarray) -> float:
    """One asynchronous SGD step on a mini-batch; returns its log-loss before the update."""
    unique, inverse = np.unique(keys.ravel(), return_inverse=True)
    inverse = inverse.reshape(keys.shape)
    weights = model.pull(unique).astype(np.float64)
    p = _sigmoid(weights[inverse].sum(axis=1))
    # d(logloss)/d(logit) = p - y; a weight's gradient sums that over the rows using its key.
    row_grad = (p - clicks) / len(clicks)
    grads = np.bincount(inverse.ravel(), weights=np.repeat(row_grad, keys.shape[1]), minlength=len(unique))
    model.push(unique, grads)
    return clicklog.logloss(p, clicks)


def predict(model: ShardedModel, keys: np.ndarray) -> np.ndarray:
    unique, inverse = np.unique(keys.ravel(), return_inverse=True)
    weights = model.pull(unique).astype(np.float64)
    return _sigmoid(weights[inverse.reshape(keys.shape)].sum(axis=1))


def run_trainer(env: PaddleEnv, config: TrainerConfig) -> int:
    assert env.trainer_id is not None
    tid, started = env.trainer_id, _monotonic()

    def log(message: str) -> None:
        print(f"trainer {tid}: {message}", flush=True)

    log(
        f"starting, PADDLE_TRAINER_ID={tid} of PADDLE_TRAINERS_NUM={env.trainers_num};"
        f" pservers {','.join(env.pservers)};"
        f" trainer endpoints {','.join(env.trainer_endpoints) or '(not set)'}"
    )
    # Every trainer generates the same log (seeded) and keeps rows tid, tid + n, ...
    train = clicklog.generate(config.train_rows, clicklog.TRAIN_SEED).shard(tid, env.trainers_num)
    test = clicklog.generate(config.test_rows, clicklog.TEST_SEED)
    train_keys = clicklog.hashed_keys(train.values, config.hash_space)
    log(f"{len(train)} training impressions ({train.clicks.mean():.1%} clicked), {len(test)} held out")

    deadline = _monotonic() + config.wait_timeout
    try:
        model = ShardedModel([connect(e, deadline, log) for e in env.pservers], env.pservers)
    except PServerError as exc:
        log(f"error: {exc}")
        return 1
    try:
        for server, answer in enumerate(model.hello()):
            expected = {"pserver_id": server, "pservers": len(env.pservers), "hash_space": config.hash_space}
            if {k: answer.get(k) for k in expected} != expected:
                log(f"error: pserver {env.pservers[server]} answered {answer}, expected {expected}")
                return 1
        log(f"connected to {len(env.pservers)} pservers after {_monotonic() - started:.1f} s")

        rng = np.random.default_rng(1000 + tid)
        batches = (len(train) + config.batch_size - 1) // config.batch_size
        for epoch in range(1, config.epochs + 1):
            order = rng.permutation(len(train))
            losses = []
            quarters = {batches * k // 4 for k in (1, 2, 3)}  # progress lines at 25, 50 and 75 %
            for b in range(batches):
                rows = order[b * config.batch_size : (b + 1) * config.batch_size]
                losses.append(train_step(model, train_keys[rows], train.clicks[rows]))
                if b + 1 in quarters:
                    log(f"epoch {epoch}/{config.epochs} batch {b + 1}/{batches} logloss {np.mean(losses[-50:]):.4f}")
            log(f"epoch {epoch}/{config.epochs} done: train logloss {np.mean(losses):.4f}")

        p = predict(model, clicklog.hashed_keys(test.values, config.hash_space))
    except (OSError, wire.ProtocolError, PServerError) as exc:
        log(f"error: lost the parameter servers: {exc}")
        return 1
    finally:
        model.close()

    result = {
        "trainer_id": tid,
        "auc": clicklog.auc(p, test.clicks),
        "logloss": clicklog.logloss(p, test.clicks),
        "baseline_logloss": clicklog.logloss(np.full(len(test), train.clicks.mean()), test.clicks),
        "true_model_auc": clicklog.auc(test.true_ctr, test.clicks),
        "epochs": config.epochs,
        "seconds": round(_monotonic() - started, 2),
    }
    log(
        f"held-out auc {result['auc']:.4f} logloss {result['logloss']:.4f}"
        f" (constant-rate baseline: auc 0.5, logloss {result['baseline_logloss']:.4f};"
        f" the hidden true model: auc {result['true_model_auc']:.4f})"
    )
    if config.output is not None:
        config.output.parent.mkdir(parents=True, exist_ok=True)
        config.output.write_text(json.dumps(result, indent=2) + "\n")
        log(f"wrote {config.output}")
    print(f"trainer {tid} done: auc {result['auc']:.3f}", flush=True)
    return 0
