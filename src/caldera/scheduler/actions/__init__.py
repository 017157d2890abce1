"""L1: scheduling actions, run in the configured order within a session."""
