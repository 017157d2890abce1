"""Each dashboard page's first data, written into the page itself: no request after the page loads.

A page's module would otherwise load, then ask the API for its view, then draw it: one more
round trip, after the module, on the way to the first screen. Instead the server computes the
same view while it writes the page (`first_view`) and puts it in a JSON data block
(`<script type="application/json" id="caldera-first">`, which no browser executes, so the
Content-Security-Policy's "no inline script" still holds); the module reads it once and
draws, and its later loads go to the API as before. The view's "resourceVersion" is where
the page's watch starts, so nothing that changes after the page was written is missed.

The data block is JSON with `<`, `>` and `&` escaped as \\u003c, \\u003e, \\u0026 (which JSON reads as the
same characters), so no name in it can close the element or open markup.
Invariant: the block holds exactly what the page's API request would answer (the timeline in
its columns form), for the session that asked for the page; a view that cannot be computed is
left out and the page asks the API as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pydantic_core import to_json

from caldera.core.errors import CalderaError
from caldera.server.views import timeline_columns
from caldera.system.api import JSON, ClusterAPI

ELEMENT_ID = "caldera-first"
DAY = 86400.0
NODES_PODS_UP_TO = 12  # the nodes page's FOLD: a node of more pods comes with its GPU holders only


def first_view(
    cluster: ClusterAPI, module: str, params: Mapping[str, str], query: Mapping[str, str], now: float
) -> JSON | None:
    """The view the page `module` reads first (its path parameters and query as the page has them), or None."""
    views: dict[str, Callable[[], JSON]] = {
        "overview": cluster.overview,
        "jobs": cluster.job_table,
        "nodes": lambda: cluster.allocations(None, NODES_PODS_UP_TO),
        "timeline": lambda: timeline_columns(cluster.timeline(None, None, _timeline_since(query, now), None)),
        "job": lambda: cluster.describe_job(params["namespace"], params["name"]),
    }
    view = views.get(module)
    if view is None:
        return None
    try:
        return view()
    except CalderaError:  # no such job, or a cluster without the view: the page asks the API and shows why
        return None


def _timeline_since(query: Mapping[str, str], now: float) -> float | None:
    """The start of the timeline page's window (`?window=` seconds back; -1 or none: the last day; 0: all)."""
    try:
        seconds = float(query.get("window", "-1"))
    except ValueError:
        seconds = -1.0
    if seconds == 0:
        return None
    return now - (DAY if seconds < 0 else seconds)


def data_block(view: JSON | None) -> str:
    """The page's data element for `view` (empty without one)."""
    if view is None:
        return ""
    text = to_json(view).replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026").decode()
    return f'<script type="application/json" id="{ELEMENT_ID}">{text}</script>'
