"""TensorFlow's MultiWorkerMirroredStrategy, unchanged, from the TF_CONFIG caldera sets.

`caldera submit tf --workers 2` gives each worker pod TF_CONFIG (the tensorflow plugin): the
cluster's `host:port` of every worker, on the embedded cluster 127.0.0.1 with the port mapped
for each pod, and the pod's own task. TF's TFConfigClusterResolver reads it, each worker
starts its gRPC server on its own entry, and the strategy all-reduces gradients between them.
"""

from __future__ import annotations

import json
from typing import Any

from e2e.conftest import Caldera

from .conftest import SCRIPTS, finish, framework_python, pod_logs


def report(log: str) -> dict[str, Any]:
    (line,) = [line for line in log.splitlines() if line.startswith("worker {")]
    return json.loads(line.removeprefix("worker "))


def test_multi_worker_mirrored_strategy_trains_from_calderas_tf_config(cluster: Caldera) -> None:
    python = framework_python("tensorflow")
    cluster.ok(
        "submit", "tf", "--name", "mwms", "--workers", "2", "--cpu", "500m", "--",
        python, str(SCRIPTS / "tf_mwms.py"),
    )  # fmt: skip
    finish(cluster, "mwms", timeout=300)
    assert cluster.job("mwms")["retryCount"] == 0, pod_logs(cluster, "mwms")

    workers = [report(cluster.pod_log(f"mwms-worker-{i}")) for i in (0, 1)]
    endpoints = workers[0]["TF_CONFIG"]["cluster"]["worker"]
    assert len(endpoints) == 2 and len(set(endpoints)) == 2
    assert all(e.startswith("127.0.0.1:") for e in endpoints)
    for i, w in enumerate(workers):
        # What caldera set is what TF read: the cluster, and this pod's task.
        assert w["TF_CONFIG"] == {"cluster": {"worker": endpoints}, "task": {"type": "worker", "index": i}}
        assert w["cluster"] == {"worker": endpoints}
        assert w["task"] == ["worker", i]
        assert w["replicas"] == 2
        assert w["losses"][-1] < w["losses"][0] / 2, w["losses"]
    # Each worker had its own batch: equal weights and losses mean the gradients were all-reduced.
    assert workers[0]["weights"] == workers[1]["weights"]
    assert workers[0]["losses"] == workers[1]["losses"]
