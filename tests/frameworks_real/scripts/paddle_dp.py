"""A few data-parallel steps in Paddle's dynamic graph on CPU; one JSON line `worker {...}` per process.

Run by `python -m paddle.distributed.launch`, which gives the process its rank, world and
master (PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, PADDLE_MASTER) and, without GPUs, the gloo
backend (PADDLE_DISTRI_BACKEND). Each rank trains on its own batches: equal parameters on
every rank mean the gradients were all-reduced.
"""

import json
import os
import sys

import numpy as np
import paddle
import paddle.distributed as dist

SHOWN = (
    "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_DISTRI_BACKEND",
    "PADDLE_JOB_ID", "PADDLE_ELASTIC_SERVER", "PADDLE_ELASTIC_JOB_ID", "PADDLE_ELASTIC_NP", "POD_IP", "CALDERA_POD",
)  # fmt: skip

dist.init_parallel_env()
paddle.seed(0)
model = paddle.DataParallel(paddle.nn.Linear(4, 1))
optimizer = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
rng = np.random.default_rng(dist.get_rank())
for _ in range(5):
    x = paddle.to_tensor(rng.normal(size=(16, 4)).astype("float32"))
    loss = ((model(x) - x.sum(axis=1, keepdim=True)) ** 2).mean()
    loss.backward()
    optimizer.step()
    optimizer.clear_grad()
params = [round(float(v), 6) for p in model.parameters() for v in p.numpy().ravel()]
shown = {k: os.environ.get(k) for k in SHOWN}
print("worker " + json.dumps({**shown, "rank": dist.get_rank(), "world": dist.get_world_size(), "params": params}))
sys.stdout.flush()
