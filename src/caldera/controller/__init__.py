"""L1: the job controller: Volcano's job state machine and policy resolution, as pure functions."""
