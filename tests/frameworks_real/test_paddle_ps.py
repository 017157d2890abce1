"""PaddlePaddle's fleet in parameter-server mode, unchanged, as seeds 000/003 run it: 2 pservers, 2 trainers.

`caldera submit paddle --pservers 2 --trainers 2` gives every pod the parameter-server
variables (the paddle plugin); the script is plain fleet code (`fleet.init()`, whose
PaddleCloudRoleMaker reads them). Paddle 2.6.2: the 3.x CPU wheels have no parameter-server
core (`paddle.base.libpaddle.DistFleetWrapper`). The job is done when the trainers are; the
pservers, which serve for ever, are then stopped.
"""

from __future__ import annotations

import json
import re
from typing import Any

from e2e.conftest import Caldera

from .conftest import SCRIPTS, finish, framework_python, pod_logs

PSERVERS = ("ps-pserver-0", "ps-pserver-1")
TRAINERS = ("ps-trainer-0", "ps-trainer-1")


def line(log: str, kind: str) -> dict[str, Any]:
    (found,) = [x for x in log.splitlines() if x.startswith(f"{kind} {{")]
    return json.loads(found.removeprefix(f"{kind} "))


def test_fleet_parameter_servers_and_trainers_from_calderas_paddle_variables(cluster: Caldera) -> None:
    python = framework_python("paddle-ps")
    cluster.ok(
        "submit", "paddle", "--name", "ps", "--pservers", "2", "--trainers", "2", "--cpu", "300m", "--",
        python, str(SCRIPTS / "paddle_ps.py"),
    )  # fmt: skip
    finish(cluster, "ps", timeout=300)
    job = cluster.json("get", "ps")
    assert job["retryCount"] == 0, pod_logs(cluster, "ps")
    ended = {p["name"]: (p["phase"], p["reason"]) for p in job["pods"]}
    assert [ended[t] for t in TRAINERS] == [("Succeeded", "")] * 2, ended
    assert [ended[s][1] for s in PSERVERS] == ["Stopped"] * 2, ended  # by CompleteJob, the trainers done

    logs = {pod: cluster.pod_log(pod) for pod in PSERVERS + TRAINERS}
    servers = [line(logs[pod], "server") for pod in PSERVERS]
    trainers = [line(logs[pod], "trainer") for pod in TRAINERS]
    endpoints = servers[0]["env"]["PADDLE_PSERVERS_IP_PORT_LIST"].split(",")
    workers = servers[0]["env"]["PADDLE_TRAINER_ENDPOINTS"].split(",")
    assert len(set(endpoints + workers)) == 4  # one host, four ports: caldera mapped one per pod
    for i, seen in enumerate(servers + trainers):
        # What fleet's role maker read is what caldera set.
        assert (seen["servers"], seen["workers"]) == (endpoints, workers), seen
        assert (seen["server_num"], seen["worker_num"]) == (2, 2)
        assert seen["index"] == int(seen["env"]["PADDLE_TRAINER_ID"]) == i % 2
    for i, pod in enumerate(PSERVERS):
        # Each server found its id from POD_IP:PADDLE_PORT in the list, and listens there.
        env = servers[i]["env"]
        assert (env["TRAINING_ROLE"], f"{env['POD_IP']}:{env['PADDLE_PORT']}") == ("PSERVER", endpoints[i])
        assert re.search(rf"running server with rank id: {i}, endpoint: {re.escape(endpoints[i])}$", logs[pod], re.M)
    for trainer in trainers:
        assert trainer["env"]["TRAINING_ROLE"] == "TRAINER" and trainer["steps"] == 40
        assert "send" in trainer["ops"] and "sgd" not in trainer["ops"]  # the servers optimize
    # What the servers hold changed while the trainers trained: the servers applied their gradients.
    before, after = trainers[0]["tables"]
    assert before and after and before != after, trainers[0]
