"""Fixtures of the example tests: see example_processes.py."""

from example_processes import start

__all__ = ["start"]
