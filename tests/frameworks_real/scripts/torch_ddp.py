"""A few DDP steps on CPU (gloo), run by torchrun; each worker prints one JSON line `worker {...}`.

The line holds what torchrun gave the worker (RANK, WORLD_SIZE, GROUP_RANK, MASTER_ADDR/PORT,
...), what caldera gave its pod (the PET_* torchrun read, which the worker inherits) and the
trained parameters, which are the same on every rank only if the gradients were all-reduced.
"""

import gc
import json
import os
import sys

import torch
import torch.distributed as dist

SHOWN = (
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RUN_ID", "PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NNODES", "PET_NODE_RANK",
    "PET_RDZV_ENDPOINT", "CALDERA_POD",
)  # fmt: skip


def train() -> list[float]:
    torch.manual_seed(0)  # the same initial weights everywhere; DDP broadcasts rank 0's anyway
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(dist.get_rank())  # each rank its own batches
    for _ in range(5):
        x = torch.randn(16, 4, generator=data)
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return [round(v, 6) for p in model.parameters() for v in p.detach().flatten().tolist()]


dist.init_process_group("gloo")
params = train()
shown = {k: os.environ.get(k) for k in SHOWN}
# One write of the whole line: the two workers of a pod share its log, and print() writes the text and its
# newline apart when stdout is unbuffered (PYTHONUNBUFFERED), so two lines could run into one.
sys.stdout.write("worker " + json.dumps({**shown, "params": params}) + "\n")
sys.stdout.flush()
dist.barrier()  # nobody tears the group down while another rank still uses it
gc.collect()  # the DDP model holds the group: free it first, or gloo's threads may abort at exit
dist.destroy_process_group()
