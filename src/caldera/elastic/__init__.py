"""Helpers for training scripts that run under an elastic launcher (`caldera launch`, torchrun).

The contract is Paddle's hot restart. When a peer dies, joins or leaves, the launcher
stops every training process and starts them all again with new RANK / WORLD_SIZE /
MASTER_PORT and TORCHELASTIC_RESTART_COUNT + 1. The script does not survive the change;
it resumes from its last checkpoint::

    from caldera.elastic import load_checkpoint, save_checkpoint, world

    here = world()                                   # rank, world_size, restart_count, ...
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    checkpoint = load_checkpoint("ckpt/last.pt")     # every rank; None on a fresh start
    start = 0
    if checkpoint is not None:
        model.load_state_dict(checkpoint.state["model"])
        optimizer.load_state_dict(checkpoint.state["optimizer"])
        start = checkpoint.epoch
    for epoch in range(start, epochs):
        ...                                          # shard the data by here.world_size
        save_checkpoint("ckpt/last.pt", {"model": ..., "optimizer": ...}, epoch=epoch + 1, step=step)

No barrier is needed around either call. Rank 0 alone writes, atomically, so readers see
the previous checkpoint or the new one, never half of one; and every rank loads before
the first collective of a round, while no process of the round can be writing (the
launcher has stopped the previous round's processes first). The directory must be one
that all ranks see (the same directory on one host, a shared file system across hosts).

After a load the world may have a different size than the one that saved
(`Checkpoint.world_size`): shard the data by the *current* `world().world_size`, and keep
the global batch (and so the learning rate) independent of it, or rescale them, or the
resumed run is not the run that was interrupted.

Only the standard library is imported here; torch is imported when a function needs it.
"""

from caldera.elastic.checkpoint import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint
from caldera.elastic.rng import rng_state, set_rng_state
from caldera.elastic.world import ElasticEnvError, World, world

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "ElasticEnvError",
    "World",
    "load_checkpoint",
    "rng_state",
    "save_checkpoint",
    "set_rng_state",
    "world",
]
