"""The workers' environment: torch's and Paddle's variables, exact, for 2 nodes x 2 processes.

Expected values follow reference/job-interfaces.md §b.1 (torchrun → worker: RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK, ROLE_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
TORCHELASTIC_*) and §b.3 / elastic-etcd.md §a.1 (Paddle collective: PADDLE_TRAINER_ENDPOINTS with
every process's ip:port, PADDLE_CURRENT_ENDPOINT, PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM,
PADDLE_RANK_IN_NODE, PADDLE_TRAINERS with the nodes' ips, DISTRIBUTED_TRAINER_ENDPOINTS).
"""

from __future__ import annotations

import pytest

from caldera.launcher.envs import IncompleteRound, render
from caldera.launcher.records import Ack, Round

ROUND = Round(7, ("node-b", "node-a"), 0)  # node-b is rank 0
ACKS = {
    "node-a": Ack("10.0.0.1", (6001, 6002)),
    "node-b": Ack("10.0.0.2", (7001, 7002), master_port=29400),
}
ENDPOINTS = "10.0.0.2:7001,10.0.0.2:7002,10.0.0.1:6001,10.0.0.1:6002"


def common(group_rank: int) -> dict[str, str]:
    return {
        "WORLD_SIZE": "4",
        "LOCAL_WORLD_SIZE": "2",
        "GROUP_RANK": str(group_rank),
        "GROUP_WORLD_SIZE": "2",
        "ROLE_WORLD_SIZE": "4",
        "ROLE_NAME": "default",
        "MASTER_ADDR": "10.0.0.2",
        "MASTER_PORT": "29400",
        "TORCHELASTIC_RESTART_COUNT": "7",
        "TORCHELASTIC_MAX_RESTARTS": "3",
        "TORCHELASTIC_RUN_ID": "job-1",
        "TORCHELASTIC_USE_AGENT_STORE": "False",
        "PADDLE_TRAINER_ENDPOINTS": ENDPOINTS,
        "DISTRIBUTED_TRAINER_ENDPOINTS": ENDPOINTS,
        "PADDLE_TRAINERS_NUM": "4",
        "PADDLE_TRAINERS": "10.0.0.2,10.0.0.1",
        "PADDLE_TRAINING_ROLE": "TRAINER",
        "PADDLE_MASTER": "10.0.0.2:29400",
        "PADDLE_GLOBAL_SIZE": "4",
        "PADDLE_LOCAL_SIZE": "2",
        "CALDERA_ELASTIC_ROUND": "7",
        "OMP_NUM_THREADS": "1",
    }


def per_process(rank: int, local_rank: int, endpoint: str) -> dict[str, str]:
    return {
        "RANK": str(rank),
        "LOCAL_RANK": str(local_rank),
        "ROLE_RANK": str(rank),
        "PADDLE_TRAINER_ID": str(rank),
        "PADDLE_RANK_IN_NODE": str(local_rank),
        "PADDLE_CURRENT_ENDPOINT": endpoint,
        "PADDLE_GLOBAL_RANK": str(rank),
        "PADDLE_LOCAL_RANK": str(local_rank),
    }


def test_two_nodes_two_processes_rank0_node():
    envs = render("job-1", ROUND, ACKS, "node-b", max_restarts=3, base={})
    assert envs == [
        {**common(0), **per_process(0, 0, "10.0.0.2:7001")},
        {**common(0), **per_process(1, 1, "10.0.0.2:7002")},
    ]


def test_two_nodes_two_processes_rank1_node():
    envs = render("job-1", ROUND, ACKS, "node-a", max_restarts=3, base={})
    assert envs == [
        {**common(1), **per_process(2, 0, "10.0.0.1:6001")},
        {**common(1), **per_process(3, 1, "10.0.0.1:6002")},
    ]


def test_every_process_sees_the_same_world():
    everyone = [e for node in ROUND.members for e in render("job-1", ROUND, ACKS, node, 3, {})]
    assert [e["RANK"] for e in everyone] == ["0", "1", "2", "3"]
    assert {e["PADDLE_TRAINER_ENDPOINTS"] for e in everyone} == {ENDPOINTS}
    assert [e["PADDLE_CURRENT_ENDPOINT"] for e in everyone] == ENDPOINTS.split(",")


def test_omp_num_threads_is_left_alone_when_set():
    envs = render("job-1", ROUND, ACKS, "node-a", 3, base={"OMP_NUM_THREADS": "4"})
    assert all("OMP_NUM_THREADS" not in e for e in envs)


def test_nodes_with_different_process_counts():
    round_ = Round(0, ("x", "y"))
    acks = {"x": Ack("h1", (1,), master_port=9), "y": Ack("h2", (2, 3, 4))}
    envs = render("j", round_, acks, "y", 0, {})
    assert [e["RANK"] for e in envs] == ["1", "2", "3"]
    assert {e["WORLD_SIZE"] for e in envs} == {"4"}


@pytest.mark.parametrize(
    ("acks", "message"),
    [
        ({"node-b": ACKS["node-b"]}, "no acknowledgement from node-a"),
        ({**ACKS, "node-b": Ack("10.0.0.2", (7001, 7002))}, "rank 0 published no master port"),
    ],
    ids=["missing-ack", "no-master-port"],
)
def test_incomplete_rounds_are_refused(acks, message):
    with pytest.raises(IncompleteRound, match=message):
        render("job-1", ROUND, acks, "node-a", 3, {})


def test_with_gpus_each_process_gets_its_device_as_paddle_s_launcher_does():
    envs = render("job-1", ROUND, ACKS, "node-a", 3, base={"CUDA_VISIBLE_DEVICES": "4,5"})
    assert [e["FLAGS_selected_gpus"] for e in envs] == ["0", "1"]
    assert {e["PADDLE_LOCAL_DEVICE_IDS"] for e in envs} == {"0,1"}
    assert {e["PADDLE_WORLD_DEVICE_IDS"] for e in envs} == {"0,1:0,1"}


def test_without_gpus_no_device_variables():
    envs = render("job-1", ROUND, ACKS, "node-a", 3, base={"CUDA_VISIBLE_DEVICES": ""})
    assert not any(k in e for e in envs for k in ("FLAGS_selected_gpus", "PADDLE_LOCAL_DEVICE_IDS"))


def test_what_paddle_s_collective_role_maker_reads_is_there():
    """reference/job-interfaces.md: collective mode reads these (device ids only with GPUs)."""
    (env, _) = render("job-1", ROUND, ACKS, "node-b", 3, base={})
    read = ["PADDLE_TRAINER_ID", "PADDLE_TRAINING_ROLE", "PADDLE_TRAINER_ENDPOINTS", "PADDLE_CURRENT_ENDPOINT"]
    read += ["PADDLE_RANK_IN_NODE", "PADDLE_TRAINERS_NUM", "PADDLE_MASTER", "PADDLE_GLOBAL_SIZE", "PADDLE_LOCAL_RANK"]
    assert all(env.get(k) for k in read)
    assert env["PADDLE_CURRENT_ENDPOINT"] == env["PADDLE_TRAINER_ENDPOINTS"].split(",")[int(env["PADDLE_TRAINER_ID"])]
