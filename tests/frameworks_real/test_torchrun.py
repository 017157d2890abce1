"""torchrun, unchanged, inside a PyTorch job: static and c10d rendezvous from the variables caldera sets.

`caldera submit pytorch --workers 2` makes a master and a worker pod, each running
`torchrun --nproc-per-node=2 SCRIPT` with no rendezvous flag: torchrun takes every flag it is
not given from `PET_<FLAG>` (torch/distributed/argparse_util.py), which the pytorch plugin
sets. With static rendezvous (torchrun's default) the agents meet at PET_MASTER_ADDR:
PET_MASTER_PORT as node PET_NODE_RANK of PET_NNODES; with `--rdzv-backend=c10d` they meet at
PET_RDZV_ENDPOINT, the same master endpoint. Each of the 4 training processes all-reduces its
gradients for a few DDP steps; equal parameters on every rank show they trained as one group.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from e2e.conftest import Caldera

from .conftest import SCRIPTS, finish, pod_logs

NPROC = 2
# torchrun's own account of what it used (launcher/api.py, logged at INFO: LOGLEVEL=INFO)
LAUNCH_CONFIG = re.compile(r"rdzv_backend +: (\S+)\n.*rdzv_endpoint +: (\S*)\n", re.MULTILINE)


def workers(log: str) -> list[dict[str, Any]]:
    return [json.loads(line.removeprefix("worker ")) for line in log.splitlines() if line.startswith("worker {")]


@pytest.mark.parametrize("rendezvous", ["static", "c10d"])
def test_torchrun_meets_at_the_master_caldera_names(cluster: Caldera, rendezvous: str) -> None:
    name = f"torchrun-{rendezvous}"
    flags = ["--rdzv-backend=c10d"] if rendezvous == "c10d" else []
    cluster.ok(
        "submit", "pytorch", "--name", name, "--workers", "2", "--cpu", "500m", "-e", "LOGLEVEL=INFO", "--",
        "torchrun", *flags, f"--nproc-per-node={NPROC}", str(SCRIPTS / "torch_ddp.py"),
    )  # fmt: skip
    finish(cluster, name, timeout=240)
    assert cluster.job(name)["retryCount"] == 0, pod_logs(cluster, name)  # right the first time

    logs = {pod: cluster.pod_log(pod) for pod in (f"{name}-master-0", f"{name}-worker-0")}
    found = [w for log in logs.values() for w in workers(log)]
    assert len(found) == 2 * NPROC, pod_logs(cluster, name)
    assert sorted(int(w["RANK"]) for w in found) == [0, 1, 2, 3]
    assert {(w["WORLD_SIZE"], w["LOCAL_WORLD_SIZE"]) for w in found} == {("4", "2")}
    assert len({json.dumps(w["params"]) for w in found}) == 1, found  # one group: the gradients were all-reduced

    master = cluster.json("get", name)["pods"]
    # What caldera set: the master pod's mapped port, two nodes, the node's rank.
    (pet,) = {(w["PET_MASTER_ADDR"], w["PET_MASTER_PORT"], w["PET_NNODES"], w["PET_RDZV_ENDPOINT"]) for w in found}
    addr, port, nnodes, endpoint = pet
    assert (addr, nnodes, endpoint) == ("127.0.0.1", "2", f"127.0.0.1:{port}"), (pet, master)
    for w in found:
        # The node's rank is caldera's pod rank: the master pod's processes are global ranks 0-1.
        node = 0 if w["CALDERA_POD"].endswith("-master-0") else 1
        assert w["PET_NODE_RANK"] == str(node)
        if rendezvous == "static":
            # Static rendezvous is exactly what caldera said: node rank, and the store at the master's port.
            assert (w["GROUP_RANK"], w["MASTER_ADDR"], w["MASTER_PORT"]) == (str(node), addr, port), w
            assert int(w["RANK"]) // NPROC == node
        else:
            assert w["GROUP_RANK"] in ("0", "1"), w  # c10d ranks nodes in the order they joined
    if rendezvous == "c10d":
        assert sorted(w["GROUP_RANK"] for w in found) == ["0", "0", "1", "1"]
    # Both agents rendezvoused where caldera said, with the backend asked for.
    for pod, log in logs.items():
        assert LAUNCH_CONFIG.findall(log) == [(rendezvous, endpoint)], (pod, log)
