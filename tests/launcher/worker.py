"""A stand-in training process for the launcher tests (not torch: it starts in ~20 ms).

It writes `<dir>/<pod>-r<round>-l<local rank>.json` (its rendezvous variables and pid), then
waits until one of `<dir>/exit-<pod>-r<round>`, `<dir>/exit-<pod>`, `<dir>/exit` exists (most
specific first) and exits with the code written in it. `<dir>` is argv[1]; the pod is
CALDERA_POD_NAME, which the launcher's environment passes down.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

VARIABLES = [
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "ROLE_RANK",
    "ROLE_WORLD_SIZE",
    "ROLE_NAME",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_MAX_RESTARTS",
    "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_USE_AGENT_STORE",
    "OMP_NUM_THREADS",
    "PADDLE_TRAINER_ENDPOINTS",
    "PADDLE_CURRENT_ENDPOINT",
    "PADDLE_TRAINER_ID",
    "PADDLE_TRAINERS_NUM",
    "PADDLE_RANK_IN_NODE",
    "PADDLE_TRAINERS",
    "DISTRIBUTED_TRAINER_ENDPOINTS",
    "CALDERA_ELASTIC_ROUND",
]


def main() -> int:
    where = Path(sys.argv[1])
    pod = os.environ.get("CALDERA_POD_NAME", "pod")
    round_, local = os.environ["CALDERA_ELASTIC_ROUND"], os.environ["LOCAL_RANK"]
    record = {k: os.environ.get(k) for k in VARIABLES} | {"pid": os.getpid(), "pod": pod}
    name = f"{pod}-r{round_}-l{local}.json"
    (where / f".{name}").write_text(json.dumps(record))
    (where / f".{name}").rename(where / name)
    pause = threading.Event()
    while True:
        for candidate in (f"exit-{pod}-r{round_}", f"exit-{pod}", "exit"):
            path = where / candidate
            if path.exists():
                return int(path.read_text().strip() or 0)
        pause.wait(0.02)


if __name__ == "__main__":
    sys.exit(main())
