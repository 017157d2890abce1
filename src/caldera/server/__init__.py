"""L3: the daemon's REST API (FastAPI), and `python -m caldera.server`, the daemon process.

The web framework lives here and nowhere else (an import-linter contract).
"""

from __future__ import annotations

from caldera.server.app import create_app

__all__ = ["create_app"]
