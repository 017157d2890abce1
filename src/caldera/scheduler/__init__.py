"""L1: the scheduler: snapshot, session, statement, actions and plugins (Volcano's model)."""
