"""A parameter server: one shard of the model's weights, updated by the trainers' gradients.

Keys are sharded by `key % number_of_pservers`; server `i` keeps the keys with remainder
`i`, in a dense table indexed by `key // number_of_pservers`. Trainers pull the weights
of the keys in their mini-batch and push back gradients; the server applies each push at
once with Adagrad, without waiting for the other trainers (asynchronous SGD, as in
Paddle's async parameter-server mode, where the optimizer also runs on the servers).

The server serves until it is told to stop (SIGTERM or SIGINT), then exits with 0: it
never ends on its own, the batch system stops it once the trainers have completed.
"""

from __future__ import annotations

import signal
import socketserver
import threading
from types import FrameType

import numpy as np
import wire
from paddle_env import PaddleEnv


class ShardTable:
    """This server's slice of the weights, with Adagrad's per-weight accumulators."""

    def __init__(self, pserver_id: int, pservers: int, hash_space: int, lr: float) -> None:
        self.pserver_id, self.pservers, self.hash_space, self.lr = pserver_id, pservers, hash_space, lr
        size = (hash_space + pservers - 1) // pservers
        self.weights = np.zeros(size, dtype=np.float32)
        self.sum_sq_grad = np.zeros(size, dtype=np.float32)
        self.touched = np.zeros(size, dtype=bool)
        self.lock = threading.Lock()
        self.pulls = self.pushes = 0

    def _slots(self, keys: np.ndarray) -> np.ndarray:
        if len(keys) and (keys.max() >= self.hash_space or np.any(keys % self.pservers != self.pserver_id)):
            raise ValueError(f"keys outside pserver {self.pserver_id}'s shard")
        return (keys // np.uint64(self.pservers)).astype(np.intp)

    def pull(self, keys: np.ndarray) -> np.ndarray:
        slots = self._slots(keys)
        with self.lock:
            self.pulls += 1
            weights: np.ndarray = self.weights[slots]
            return weights

    def push(self, keys: np.ndarray, grads: np.ndarray) -> None:
        slots = self._slots(keys)
        if len(np.unique(slots)) != len(slots):
            raise ValueError("a push must carry each key once")
        with self.lock:
            self.pushes += 1
            self.sum_sq_grad[slots] += grads * grads
            self.weights[slots] -= self.lr * grads / (np.sqrt(self.sum_sq_grad[slots]) + 1e-6)
            self.touched[slots] = True


class _Handler(socketserver.BaseRequestHandler):
    """One trainer connection: answer requests until the trainer closes it."""

    server: _Server

    def handle(self) -> None:
        sock, table = self.request, self.server.table
        wire.configure(sock)
        peer = "{}:{}".format(*self.client_address[:2])
        log = self.server.log
        log(f"connection from {peer}")
        try:
            while (message := wire.recv_message(sock)) is not None:
                meta, arrays = message
                try:
                    reply, out = self._serve(table, meta, arrays)
                except (ValueError, KeyError, IndexError) as exc:
                    reply, out = {"error": str(exc)}, []
                wire.send_message(sock, reply, *out)
                if table.pushes and meta.get("op") == "push" and table.pushes % 500 == 0:
                    log(f"{table.pushes} pushes, {table.pulls} pulls, {int(table.touched.sum())} weights trained")
        except (OSError, wire.ProtocolError) as exc:
            log(f"connection from {peer} lost: {exc}")
            return
        log(f"connection from {peer} closed")

    @staticmethod
    def _serve(
        table: ShardTable, meta: dict[str, object], arrays: list[np.ndarray]
    ) -> tuple[dict[str, object], list[np.ndarray]]:
        op = meta.get("op")
        if op == "hello":
            return {"pserver_id": table.pserver_id, "pservers": table.pservers, "hash_space": table.hash_space}, []
        if op == "pull" and len(arrays) == 1:
            return {}, [table.pull(arrays[0].astype(np.uint64, copy=False))]
        if op == "push" and len(arrays) == 2 and len(arrays[0]) == len(arrays[1]):
            table.push(arrays[0].astype(np.uint64, copy=False), arrays[1].astype(np.float32, copy=False))
            return {"ok": True}, []
        raise ValueError(f"bad request {op!r} with {len(arrays)} arrays")


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True  # a restarted server can take its port back at once
    daemon_threads = True  # open trainer connections do not keep a stopping server alive

    def __init__(self, address: tuple[str, int], table: ShardTable, log: _Log) -> None:
        self.table, self.log = table, log
        super().__init__(address, _Handler)


class _Log:
    def __init__(self, pserver_id: int) -> None:
        self.prefix = f"pserver {pserver_id}: "

    def __call__(self, message: str) -> None:
        print(self.prefix + message, flush=True)


class _Stop(BaseException):
    """Raised in the main thread by the SIGTERM/SIGINT handler to leave serve_forever."""


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def run_pserver(env: PaddleEnv, hash_space: int, lr: float) -> int:
    assert env.pserver_id is not None and env.pod_ip is not None and env.port is not None
    log = _Log(env.pserver_id)
    table = ShardTable(env.pserver_id, len(env.pservers), hash_space, lr)
    try:
        server = _Server((env.pod_ip, env.port), table, log)
    except OSError as exc:
        log(f"error: cannot listen on {env.endpoint}: {exc}")
        return 1
    try:
        signal.signal(signal.SIGTERM, _raise_stop)
        signal.signal(signal.SIGINT, _raise_stop)
        log(
            f"listening on {env.endpoint}, serving {len(table.weights)} of {hash_space} weights"
            f" (keys with key % {len(env.pservers)} == {env.pserver_id}) for {env.trainers_num} trainers"
        )
        server.serve_forever(poll_interval=0.5)
    except _Stop as stop:
        # A second signal while closing down must not interrupt the clean exit.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        log(f"{stop} received, stopping")
    finally:
        server.server_close()
    log(f"stopped after {table.pushes} pushes and {table.pulls} pulls; {int(table.touched.sum())} weights trained")
    return 0
