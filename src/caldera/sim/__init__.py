"""L3: the simulator: the real scheduler and controller on a fake executor and a virtual clock."""
