"""caldera: a batch system for distributed deep-learning training."""

__version__ = "0.1.0"
