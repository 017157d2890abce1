"""Where `caldera submit` hands a manifest to the daemon: a stand-in until the API client exists."""

from __future__ import annotations

from typing import Any

from caldera.core.errors import CalderaError


def submit_manifest(manifest: dict[str, Any]) -> None:
    """Create the Job `manifest` on the running daemon."""
    raise CalderaError("the caldera daemon is not running: start it with `caldera up`")
