"""Gangs whose parameter servers or MPI launcher request nothing (BestEffort) while their workers ask for GPUs.

`caldera submit tf --ps 1 --workers 2 --gpus 1` and `caldera submit mpi --workers 2 --gpus 1` put
GPUs on the workers only, as Arena does: the gang mixes BestEffort pods and GPU pods, and must
start whole on an empty cluster.
"""

from __future__ import annotations

import pytest

from .conftest import Caldera

pytestmark = pytest.mark.e2e

DONE = ["python", "-c", "print('done')"]


def test_tf_with_ps_and_mpi_with_gpus_complete_on_an_empty_cluster(caldera: Caldera) -> None:
    caldera.up("--nodes", "3", "--gpus-per-node", "2")
    caldera.ok("submit", "tf", "--name", "t", "--ps", "1", "--workers", "2", "--gpus", "1", "--", *DONE)
    caldera.ok("submit", "mpi", "--name", "m", "--workers", "2", "--gpus", "1", "--", *DONE)
    for name in ("t", "m"):
        caldera.wait_job(name, lambda j: j["phase"] == "Completed", f"job {name} to complete", timeout=90)
    assert "done" in caldera.pod_log("t-worker-0")
    assert "done" in caldera.pod_log("m-master-0")
