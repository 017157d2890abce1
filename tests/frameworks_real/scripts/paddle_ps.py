"""Paddle fleet in parameter-server mode (static graph, async), as seeds 000/003 run it; one JSON line per process.

`fleet.init()` makes a PaddleCloudRoleMaker, which reads the role, ids and endpoints from the
environment (TRAINING_ROLE, PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_TRAINER_ENDPOINTS,
PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ID, POD_IP, PADDLE_PORT). A server prints `server {...}`
(what fleet read) and serves its shard of the parameters until it is stopped. A trainer runs a
few steps of a linear regression, pushing its gradients to the servers, which apply them (the
trainer's program has no optimizer op), and prints `trainer {...}`. The first trainer also has
the servers save their tables (`fleet.save_persistables`) before and after training, and
reports whether what they hold changed: only the servers' updates can have changed it.
"""

import gzip
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle
from paddle.distributed import fleet

STEPS = 40
ENV = (
    "TRAINING_ROLE", "PADDLE_TRAINER_ID", "POD_IP", "PADDLE_PORT", "PADDLE_PSERVERS_IP_PORT_LIST",
    "PADDLE_TRAINER_ENDPOINTS", "PADDLE_TRAINERS_NUM",
)  # fmt: skip
paddle.enable_static()
fleet.init()
x = paddle.static.data(name="x", shape=[None, 8], dtype="float32")
y = paddle.static.data(name="y", shape=[None, 1], dtype="float32")
loss = paddle.mean(paddle.nn.functional.square_error_cost(paddle.static.nn.fc(x, size=1), y))
strategy = fleet.DistributedStrategy()
strategy.a_sync = True  # the CTR demo's mode: trainers push gradients, servers apply them
fleet.distributed_optimizer(paddle.optimizer.SGD(learning_rate=0.05), strategy).minimize(loss)
seen = {
    "env": {k: os.environ.get(k) for k in ENV},
    "servers": fleet.server_endpoints(),
    "workers": fleet.worker_endpoints(),
    "server_num": fleet.server_num(),
    "worker_num": fleet.worker_num(),
}

if fleet.is_server():
    print("server " + json.dumps({**seen, "index": fleet.server_index()}), flush=True)
    fleet.init_server()
    fleet.run_server()  # serves until the job stops it
    sys.exit(0)


def tables(exe: paddle.static.Executor, directory: Path) -> str:
    """A digest of what the servers hold: they write their tables under `directory` (this host's disk)."""
    fleet.save_persistables(exe, str(directory))
    files = sorted(p for p in directory.rglob("*.gz"))
    assert files, f"the servers saved no table under {directory}"
    return hashlib.sha256(b"".join(gzip.decompress(p.read_bytes()) for p in files)).hexdigest()


exe = paddle.static.Executor(paddle.CPUPlace())
exe.run(paddle.static.default_startup_program())
fleet.init_worker()
first = fleet.is_first_worker()
saved = Path(tempfile.mkdtemp(prefix="paddle-ps-tables-"))
before = tables(exe, saved / "before") if first else None
rng = np.random.default_rng(fleet.worker_index())
losses = []
for _ in range(STEPS):
    batch = rng.normal(size=(32, 8)).astype("float32")
    feed = {"x": batch, "y": (batch @ np.linspace(-1, 1, 8, dtype="float32"))[:, None]}
    losses.append(float(exe.run(paddle.static.default_main_program(), feed=feed, fetch_list=[loss])[0]))
fleet.stop_worker()  # sends what is still queued
after = tables(exe, saved / "after") if first else None
shutil.rmtree(saved)
ops = sorted({op.type for op in paddle.static.default_main_program().global_block().ops})
report = {**seen, "index": fleet.worker_index(), "ops": ops, "steps": len(losses), "tables": [before, after]}
print("trainer " + json.dumps(report), flush=True)
