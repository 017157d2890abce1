"""The views API over real HTTP: overview, allocations and timeline, in the OpenAPI description."""

from __future__ import annotations

import httpx
import pytest

from caldera.client import Client
from caldera.testing.fake_cluster import FakeCluster

from .helpers import TOKEN, LiveServer, job_manifest


def test_the_views_are_described_in_openapi(api: httpx.Client) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    for path in ("/api/v1/overview", "/api/v1/allocations", "/api/v1/jobtable", "/api/v1/timeline"):
        assert "get" in paths[path], path
    params = {p["name"] for p in paths["/api/v1/timeline"]["get"]["parameters"]}
    assert params == {"namespace", "job", "since", "until", "format"}
    assert not any(p.startswith(("/login", "/static", "/jobs")) for p in paths)  # the pages are not API


def test_overview_and_allocations(api: httpx.Client, fake: FakeCluster) -> None:
    fake.apply(job_manifest("train"))
    fake.set_pod("default", "train-master-0", node="node-0", phase="Running")
    view = api.get("/api/v1/overview").json()
    assert view["jobs"] == {"Pending": 1} and view["pods"] == {"Pending": 2, "Running": 1}
    assert {"name": "nvidia.com/gpu", "capacity": "2", "allocated": "0"} in view["resources"]
    assert isinstance(view["resourceVersion"], int)
    nodes = api.get("/api/v1/allocations").json()["items"]
    assert [p["name"] for p in nodes[0]["pods"]] == ["train-master-0"]
    brief = api.get("/api/v1/allocations", params={"podsUpTo": 0}).json()["items"][0]
    assert (brief["podCount"], brief["podsListed"], brief["pods"]) == (1, "gpu", [])  # it holds no GPU
    assert api.get("/api/v1/allocations", params={"podsUpTo": -1}).status_code == 422


def test_the_timeline_takes_its_filters_from_the_query(api: httpx.Client, fake: FakeCluster) -> None:
    fake.add_event("default", "train", "JobPhase", "Pending", "submitted")
    fake.add_event("default", "train-worker-0", "Bind")
    fake.event_log[-1]["node"] = "node-0"
    fake.add_event("default", "other-worker-0", "Bind")
    items = api.get("/api/v1/timeline", params={"job": "train", "since": 0}).json()["items"]
    assert [(s["pod"], s["job"], s["node"], s["outcome"]) for s in items] == [
        ("train-worker-0", "train", "node-0", "Running")
    ]
    bad = api.get("/api/v1/timeline", params={"since": "yesterday"})
    assert bad.status_code == 422 and "since" in bad.json()["error"]


def test_the_timeline_as_columns_holds_the_same_runs(api: httpx.Client, fake: FakeCluster) -> None:
    fake.add_event("default", "train", "JobPhase", "Pending", "submitted")
    for pod, node in [("train-worker-0", "node-0"), ("train-worker-1", "node-0"), ("train-master-0", "node-1")]:
        fake.add_event("default", pod, "Bind")
        fake.event_log[-1]["node"] = node
    fake.add_event("default", "train-worker-1", "PodPhase", "Failed", "exit 3")
    items = api.get("/api/v1/timeline", params={"since": 0}).json()
    view = api.get("/api/v1/timeline", params={"since": 0, "format": "columns"}).json()
    assert view["count"] == len(items["items"]) == 3
    assert (view["resourceVersion"], view["truncated"]) == (items["resourceVersion"], items["truncated"])
    strings, columns = view["strings"], view["columns"]
    assert len(strings) == len(set(strings))  # each text once
    runs = [
        {
            **{name: strings[columns[name][i]] for name in ("namespace", "pod", "job", "task", "node", "outcome")},
            "reason": strings[columns["reason"][i]],
            "start": view["t0"] + columns["start"][i] / 1000,
            "end": None if columns["end"][i] is None else view["t0"] + columns["end"][i] / 1000,
            "exitCode": columns["exitCode"][i],
            "restart": columns["restart"][i] == 1,
        }
        for i in range(view["count"])
    ]
    for run, item in zip(runs, items["items"], strict=True):
        assert run["start"] == pytest.approx(item["start"], abs=0.001)
        if item["end"] is not None:
            assert run["end"] == pytest.approx(item["end"], abs=0.001)
        texts = ("namespace", "pod", "job", "task", "node", "outcome", "reason")  # None is written as ""
        assert {k: run[k] for k in texts} == {k: item[k] or "" for k in texts}
        assert (run["exitCode"], run["restart"]) == (item["exitCode"], item["restart"])
    assert api.get("/api/v1/timeline", params={"format": "rows"}).status_code == 422


def test_the_client_reads_the_views(live: LiveServer, fake: FakeCluster) -> None:
    fake.add_event("default", "train", "JobPhase", "Pending", "submitted")
    with Client(live.url, TOKEN) as client:
        assert client.overview()["nodes"]["total"] == 1
        assert client.allocations()["items"][0]["name"] == "node-0"
        assert client.allocations(node="node-9")["items"] == []
        assert client.allocations(node="node-0", pods_up_to=0)["items"][0]["podsListed"] == "all"  # it has none
        assert client.job_table()["items"] == []
        assert client.timeline(namespace="default", since=0.0)["items"] == []
        assert client.info()["resourceVersion"] == 1
