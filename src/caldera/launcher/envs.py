"""The environment of each worker process of a round: torch's and Paddle's rendezvous variables.

A pure function of the round (members in rank order), the members' acknowledgements (host,
one port per process, rank 0's master port) and which node and local process it is for, so
every process of the world sees the same world. Contracts (reference/job-interfaces.md §b.1,
§b.3; reference/elastic-etcd.md §a.1, §a.3):

- torch (torchrun's names): RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
  GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME, MASTER_ADDR, MASTER_PORT,
  TORCHELASTIC_RESTART_COUNT (the round number: a job-wide count, the same on every node),
  TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID, TORCHELASTIC_USE_AGENT_STORE=False (workers
  make their own store at MASTER_ADDR:MASTER_PORT, fresh each round), OMP_NUM_THREADS=1
  unless the launcher's environment sets it.
- Paddle collective: PADDLE_TRAINER_ENDPOINTS and DISTRIBUTED_TRAINER_ENDPOINTS (every
  process's host:port in global rank order), PADDLE_CURRENT_ENDPOINT, PADDLE_TRAINER_ID
  (global rank), PADDLE_TRAINERS_NUM (world size), PADDLE_RANK_IN_NODE (local rank),
  PADDLE_TRAINERS (each node's host in node rank order, one entry per node),
  PADDLE_TRAINING_ROLE=TRAINER (what fleet's collective role maker reads), and the new
  launcher's names PADDLE_MASTER (rank 0's host:master port), PADDLE_GLOBAL_SIZE,
  PADDLE_LOCAL_SIZE, PADDLE_GLOBAL_RANK, PADDLE_LOCAL_RANK. With GPUs (CUDA_VISIBLE_DEVICES
  set), also FLAGS_selected_gpus (the process's index among the visible devices),
  PADDLE_LOCAL_DEVICE_IDS (this node's indices) and PADDLE_WORLD_DEVICE_IDS (every node's,
  ':'-separated), as Paddle's launcher gives one device per process.
- CALDERA_ELASTIC_ROUND: the round number.

Global rank = the processes of lower-ranked nodes + local rank.
"""

from __future__ import annotations

from collections.abc import Mapping

from caldera.launcher.records import Ack, Round


class IncompleteRound(ValueError):
    """An acknowledgement the environment needs is missing or inconsistent."""


def render(
    job_id: str,
    round_: Round,
    acks: Mapping[str, Ack],
    node_id: str,
    max_restarts: int,
    base: Mapping[str, str] | None = None,
) -> list[dict[str, str]]:
    """The variables to add to `base` (the launcher's environment) for each local process of `node_id`."""
    missing = [m for m in round_.members if m not in acks]
    if missing:
        raise IncompleteRound(f"round {round_.round}: no acknowledgement from {', '.join(missing)}")
    if node_id not in round_.members:
        raise IncompleteRound(f"round {round_.round}: {node_id} is not a member")
    master = acks[round_.members[0]]
    if master.master_port is None:
        raise IncompleteRound(f"round {round_.round}: rank 0 published no master port")
    endpoints = [f"{acks[m].host}:{port}" for m in round_.members for port in acks[m].ports]
    group_rank = round_.members.index(node_id)
    offset = sum(len(acks[m].ports) for m in round_.members[:group_rank])
    mine = acks[node_id]
    world = len(endpoints)
    local_world = len(mine.ports)
    shared = {
        "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(local_world),
        "GROUP_RANK": str(group_rank),
        "GROUP_WORLD_SIZE": str(len(round_.members)),
        "ROLE_WORLD_SIZE": str(world),
        "ROLE_NAME": "default",
        "MASTER_ADDR": master.host,
        "MASTER_PORT": str(master.master_port),
        "TORCHELASTIC_RESTART_COUNT": str(round_.round),
        "TORCHELASTIC_MAX_RESTARTS": str(max_restarts),
        "TORCHELASTIC_RUN_ID": job_id,
        "TORCHELASTIC_USE_AGENT_STORE": "False",
        "PADDLE_TRAINER_ENDPOINTS": ",".join(endpoints),
        "DISTRIBUTED_TRAINER_ENDPOINTS": ",".join(endpoints),
        "PADDLE_TRAINERS_NUM": str(world),
        "PADDLE_TRAINERS": ",".join(acks[m].host for m in round_.members),
        "PADDLE_TRAINING_ROLE": "TRAINER",
        "PADDLE_MASTER": f"{master.host}:{master.master_port}",
        "PADDLE_GLOBAL_SIZE": str(world),
        "PADDLE_LOCAL_SIZE": str(local_world),
        "CALDERA_ELASTIC_ROUND": str(round_.round),
    }
    gpus = base is not None and bool(base.get("CUDA_VISIBLE_DEVICES", "").strip())
    if gpus:
        shared["PADDLE_LOCAL_DEVICE_IDS"] = ",".join(str(i) for i in range(local_world))
        shared["PADDLE_WORLD_DEVICE_IDS"] = ":".join(
            ",".join(str(i) for i in range(len(acks[m].ports))) for m in round_.members
        )
    if base is None or not base.get("OMP_NUM_THREADS"):
        shared["OMP_NUM_THREADS"] = "1"
    result = []
    for local_rank in range(local_world):
        rank = offset + local_rank
        env = dict(shared)
        env.update(
            RANK=str(rank),
            LOCAL_RANK=str(local_rank),
            ROLE_RANK=str(rank),
            PADDLE_TRAINER_ID=str(rank),
            PADDLE_RANK_IN_NODE=str(local_rank),
            PADDLE_CURRENT_ENDPOINT=endpoints[rank],
            PADDLE_GLOBAL_RANK=str(rank),
            PADDLE_LOCAL_RANK=str(local_rank),
        )
        if gpus:
            env["FLAGS_selected_gpus"] = str(local_rank)
        result.append(env)
    return result
