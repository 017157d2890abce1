"""Each dashboard page's first data, written into the page itself: no request after the page loads.

A page's module would otherwise load, then ask the API for its view, then draw it: one more
round trip, after the module, on the way to the first screen. Instead the server computes the
same view while it writes the page (`first_view`) and puts it in a JSON data block
(`<script type="application/json" id="caldera-first">`, which no browser executes, so the
Content-Security-Policy's "no inline script" still holds); the module reads it once and
draws, and its later loads go to the API as before. The view's "resourceVersion" is where
the page's watch starts, so nothing that changes after the page was written is missed.

The data block is JSON with `<`, `>` and `&` escaped as \\u003c, \\u003e, \\u0026 (which JSON
reads as the same characters), so no name in it can close the element or open markup.

The three long pages get only what their first screen shows ("partial": true, with the whole
counts): the jobs table its first FIRST_ROWS rows, the nodes page its first FIRST_NODES nodes,
the timeline the runs of its first nodes (each node whole, in the page's node order, until
FIRST_RUNS runs); the page draws them, says it is ready, and reads the whole view from the API
at once (the jobs page's watch starts from that view's version; the others load their whole
view again on any change anyway). A few hundred kB of text in a page costs the browser's HTML
parser more than `JSON.parse` costs on the same data fetched, and the first screen needs none
of it. A filtered jobs or timeline page (`?phase=`, `?job=`...) gets no first data: the rows
it shows first could be any, so it asks the API for the whole view.

Invariant: the block holds what the page's API request would answer (the timeline in its
columns form), or the first part of it marked partial, for the session that asked for the
page; a view that cannot be computed is left out and the page asks the API as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from pydantic_core import to_json

from caldera.core.errors import CalderaError
from caldera.server.views import timeline_columns
from caldera.system.api import JSON, ClusterAPI

ELEMENT_ID = "caldera-first"
DAY = 86400.0
NODES_PODS_UP_TO = 12  # the nodes page's FOLD: a node of more pods comes with its GPU holders only
FIRST_NODES = 12  # the nodes page's first cards (nodes.js draws as many before it says it is ready)
FIRST_ROWS = 100  # the jobs table's first rows: more than a screen holds (rows.js draws ~50)
FIRST_RUNS = 300  # the timeline's first runs: its first nodes' lanes fill more than a screen
JOB_FILTERS = ("namespace", "queue", "phase", "name")


def first_view(
    cluster: ClusterAPI, module: str, params: Mapping[str, str], query: Mapping[str, str], now: float
) -> JSON | None:
    """The view the page `module` reads first (its path parameters and query as the page has them), or None."""
    views: dict[str, Callable[[], JSON]] = {
        "overview": cluster.overview,
        "jobs": lambda: first_rows(cluster.job_table()),
        "nodes": lambda: first_nodes(cluster.allocations(None, NODES_PODS_UP_TO)),
        "timeline": lambda: timeline_columns(
            first_runs(cluster.timeline(None, None, _timeline_since(query, now), None))
        ),
        "job": lambda: cluster.describe_job(params["namespace"], params["name"]),
    }
    view = views.get(module)
    filtered = {"jobs": JOB_FILTERS, "timeline": ("job",)}.get(module, ())
    if view is None or any(query.get(f) for f in filtered):
        return None
    try:
        return view()
    except CalderaError:  # no such job, or a cluster without the view: the page asks the API and shows why
        return None


def first_rows(table: JSON) -> JSON:
    """The jobs table's first FIRST_ROWS jobs in the page's order ("namespace/name"), with the whole count."""
    items = sorted(table["items"], key=lambda j: f"{j['metadata']['namespace']}/{j['metadata']['name']}")
    if len(items) <= FIRST_ROWS:
        return table
    return {**table, "items": items[:FIRST_ROWS], "partial": True, "total": len(items)}


def first_nodes(allocations: JSON) -> JSON:
    """The first FIRST_NODES nodes of the allocations view, with the whole count of nodes and of pods placed."""
    items = allocations["items"]
    if len(items) <= FIRST_NODES:
        return allocations
    pods = sum(int(n["podCount"]) for n in items)
    return {**allocations, "items": items[:FIRST_NODES], "partial": True, "total": len(items), "pods": pods}


def first_runs(timeline: JSON) -> JSON:
    """The runs on the timeline's first nodes (whole nodes, in the page's order, until FIRST_RUNS runs),
    with the whole count of runs and nodes."""
    by_node: dict[str, list[JSON]] = {}
    for run in timeline["items"]:
        by_node.setdefault(run["node"] or "", []).append(run)
    if len(timeline["items"]) <= FIRST_RUNS:
        return timeline
    items: list[JSON] = []
    for node in sorted(by_node, key=_node_order):
        if len(items) >= FIRST_RUNS:
            break
        items.extend(by_node[node])
    return {**timeline, "items": items, "partial": True, "total": len(timeline["items"]), "nodes": len(by_node)}


def _node_order(name: str) -> tuple[str, int]:
    """As the timeline page orders nodes: by the name before its trailing number, then by that number."""
    found = re.fullmatch(r"(.*?)(\d+)", name, re.DOTALL)
    return (found.group(1), int(found.group(2))) if found else (name, -1)


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
