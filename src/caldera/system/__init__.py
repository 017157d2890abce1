"""L2: the only place concrete parts (store, executor, controller, scheduler, clock) are wired together."""
