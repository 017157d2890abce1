"""A real torch.distributed worker (gloo, CPU) for the launcher's end-to-end test.

It joins the process group from the launcher's environment alone (env:// rendezvous:
MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), all-reduces its rank + 1, records the result in
`<dir>/<pod>-r<round>.json`, then waits for `<dir>/exit` and leaves the group cleanly.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist


def main() -> int:
    where = Path(sys.argv[1])
    pod, round_ = os.environ["CALDERA_POD_NAME"], os.environ["CALDERA_ELASTIC_ROUND"]
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    total = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(total)
    record = {"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": total.item(), "pid": os.getpid()}
    (where / f".{pod}-r{round_}.json").write_text(json.dumps(record))
    (where / f".{pod}-r{round_}.json").rename(where / f"{pod}-r{round_}.json")
    pause = threading.Event()
    while not (where / "exit").exists():
        pause.wait(0.05)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
