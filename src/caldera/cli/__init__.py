"""L4: the command-line interface, one module per verb."""
