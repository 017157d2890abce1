"""L1: executors and stores (where pods run, where objects live)."""
