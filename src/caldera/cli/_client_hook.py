"""Where `caldera submit` hands a manifest to the daemon: the same connection every verb uses."""

from __future__ import annotations

import os
from typing import Any

import click

from caldera.cli.common import cluster


def submit_manifest(manifest: dict[str, Any]) -> None:
    """Create the Job `manifest` on the running daemon (relative paths resolve against the current directory)."""
    cluster(click.get_current_context()).apply(manifest, submit_dir=os.getcwd())
