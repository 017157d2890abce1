"""Each dashboard page carries its first data over real HTTP: what the page's API request would answer,
in a JSON block no browser runs and no text in it can close; only for a session; without it (no such
job), the page asks the API as before."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from caldera.server.firstview import (
    ELEMENT_ID,
    FIRST_NODES,
    FIRST_ROWS,
    FIRST_RUNS,
    data_block,
    first_nodes,
    first_rows,
    first_runs,
)
from caldera.testing.fake_cluster import FakeCluster

from .helpers import AUTH, HTTP_TIMEOUT, TOKEN, LiveServer, job_manifest

BLOCK = re.compile(rf'<script type="application/json" id="{ELEMENT_ID}">(.*?)</script>', re.DOTALL)


@pytest.fixture
def browser(live: LiveServer) -> Iterator[httpx.Client]:
    """A logged-in browser (the session cookie kept)."""
    with httpx.Client(base_url=live.url, timeout=HTTP_TIMEOUT, follow_redirects=False) as client:
        r = client.post("/login", data={"token": TOKEN, "next": "/"}, headers={"Origin": live.url})
        assert r.status_code == 303
        yield client


def first_data(page: httpx.Response) -> Any:
    assert page.status_code == 200, page.text
    blocks = BLOCK.findall(page.text)
    assert len(blocks) <= 1
    return json.loads(blocks[0]) if blocks else None


def without_time(view: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in view.items() if k != "time"}


@pytest.mark.parametrize(
    ("page", "api"),
    [
        ("/", "/api/v1/overview"),
        ("/jobs", "/api/v1/jobtable"),
        ("/nodes", "/api/v1/allocations?podsUpTo=12"),
        ("/jobs/default/train", "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs/train/describe"),
    ],
    ids=["overview", "jobs", "nodes", "job"],
)
def test_a_page_carries_what_its_api_request_answers(
    browser: httpx.Client, live: LiveServer, fake: FakeCluster, page: str, api: str
) -> None:
    fake.apply(job_manifest("train"))
    fake.set_pod("default", "train-master-0", node="node-0", phase="Running")
    fake.add_event("default", "train", "JobPhase", "Running", "started")
    inlined = first_data(browser.get(page))
    answer = httpx.get(f"{live.url}{api}", headers=AUTH, timeout=HTTP_TIMEOUT).json()
    assert inlined is not None and without_time(inlined) == without_time(answer)


def test_the_timeline_page_carries_its_window_as_columns(browser: httpx.Client, fake: FakeCluster) -> None:
    fake.add_event("default", "train", "JobPhase", "Pending", "submitted")
    fake.add_event("default", "train-worker-0", "Bind")
    fake.event_log[-1]["node"] = "node-0"
    view = first_data(browser.get("/timeline?window=0"))
    assert view["count"] == 1 and view["strings"][view["columns"]["pod"][0]] == "train-worker-0"
    assert first_data(browser.get("/timeline?window=nonsense"))["count"] == 1  # the page's default: the last day


def test_a_missing_job_page_has_no_data_and_asks_the_api(browser: httpx.Client, fake: FakeCluster) -> None:
    page = browser.get("/jobs/default/nothing-here")
    assert first_data(page) is None and '<script type="module"' in page.text


def test_no_session_no_data(live: LiveServer, fake: FakeCluster) -> None:
    fake.apply(job_manifest("secret-job-name"))
    r = httpx.get(f"{live.url}/jobs", follow_redirects=True, timeout=HTTP_TIMEOUT)
    assert "secret-job-name" not in r.text and ELEMENT_ID not in r.text


def test_no_text_in_the_data_closes_its_element(browser: httpx.Client, fake: FakeCluster) -> None:
    evil = "</script><script>alert(1)</script><!-- & -->"
    fake.add_event("default", "train", "JobPhase", "Pending", evil)
    page = browser.get("/")
    assert "<script>alert(1)" not in page.text and "<!--" not in page.text
    assert any(e["message"] == evil for e in first_data(page)["events"])  # the same text, once parsed


def test_the_data_block_escapes_markup_and_reads_back_the_same() -> None:
    view = {"name": "a</script><b>&amp;", "n": [1, None, 2.5], "ünï": "ok"}
    block = data_block(view)
    body = block.removeprefix(f'<script type="application/json" id="{ELEMENT_ID}">').removesuffix("</script>")
    assert not set("<>&") & set(body)
    assert json.loads(body) == view
    assert data_block(None) == ""


def _job(ns: str, name: str) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name}}


def test_a_long_jobs_table_comes_as_its_first_rows_in_the_pages_order() -> None:
    names = [f"job-{i:03d}" for i in range(FIRST_ROWS + 5)]
    table = {
        "resourceVersion": 7,
        "items": [_job("b", n) for n in reversed(names)] + [_job("a-b", "x"), _job("a", "x")],
    }
    view = first_rows(table)
    assert view["partial"] is True and view["total"] == FIRST_ROWS + 7 and view["resourceVersion"] == 7
    keys = [f"{j['metadata']['namespace']}/{j['metadata']['name']}" for j in view["items"]]
    assert keys[:3] == ["a-b/x", "a/x", "b/job-000"] and len(keys) == FIRST_ROWS  # as the page sorts "ns/name"
    short = {"items": [_job("a", "x")]}
    assert first_rows(short) is short


def test_a_long_timeline_comes_as_its_first_nodes_runs_each_node_whole() -> None:
    def run(node: str, i: int) -> dict[str, Any]:
        return {"node": node, "pod": f"p-{node}-{i}"}

    per_node = FIRST_RUNS // 2 + 1
    nodes = ["node-10", "node-2", "node-1", "gpu-0"]  # the page's order: gpu-0, node-1, node-2, node-10
    view = first_runs({"items": [run(n, i) for n in nodes for i in range(per_node)], "truncated": False})
    assert view["partial"] is True and view["total"] == 4 * per_node and view["nodes"] == 4
    assert sorted({r["node"] for r in view["items"]}) == ["gpu-0", "node-1"] and len(view["items"]) == 2 * per_node


def test_a_long_nodes_view_comes_as_its_first_nodes_with_the_whole_counts() -> None:
    items = [{"name": f"node-{i}", "podCount": 3} for i in range(FIRST_NODES + 3)]
    view = first_nodes({"items": items})
    assert [n["name"] for n in view["items"]] == [f"node-{i}" for i in range(FIRST_NODES)]
    assert (view["partial"], view["total"], view["pods"]) == (True, FIRST_NODES + 3, 3 * (FIRST_NODES + 3))


def test_a_filtered_page_gets_no_first_rows(browser: httpx.Client, fake: FakeCluster) -> None:
    fake.apply(job_manifest("train"))
    assert first_data(browser.get("/jobs?phase=Running")) is None  # the page asks the API for the whole table
    assert first_data(browser.get("/timeline?job=train")) is None
