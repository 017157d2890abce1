"""L0 utilities shared by every layer (the clock)."""
