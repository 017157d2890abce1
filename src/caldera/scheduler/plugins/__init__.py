"""L1: scheduler plugins, each implementing only the extension points it needs."""
