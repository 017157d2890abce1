"""Submissions to a cluster that applies later (`AppliesLater`, the embedded cluster's way): awaited on the
event loop, a Conflict tried again the waiting way, refusals answered as any other."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import httpx

from caldera.server import create_app
from caldera.system.api import JSON, AppliesLater, Conflict
from caldera.testing.fake_cluster import FakeCluster

from .helpers import AUTH, JOBS, TOKEN, job_manifest, serve


class LaterCluster(FakeCluster):
    """A fake whose `apply_later` checks the manifest on the caller's thread and applies it on another."""

    def __init__(self, log_dir: Path, busy: set[str] | None = None) -> None:
        self.busy = busy or set()  # names a deleted job still holds: apply_later reports them
        self.later: list[str] = []  # how each submission came in: "later", or "apply" (the waiting way)
        self._loop = ThreadPoolExecutor(max_workers=1)
        super().__init__(log_dir)
        self.later.clear()  # the default queue, applied by the fake itself

    def apply(self, manifest: JSON, submit_dir: str | None = None) -> JSON:
        self.later.append("apply")
        self.busy.discard(manifest["metadata"]["name"])  # the waiting way waits for the name
        return super().apply(manifest, submit_dir)

    def apply_later(self, manifest: JSON, submit_dir: str | None = None) -> Future[JSON]:
        self.later.append("later")
        if not isinstance(manifest.get("spec", {}).get("tasks"), list):
            return super().apply(manifest, submit_dir)  # type: ignore[return-value]  # raises: refused at once
        name = manifest["metadata"]["name"]

        def run() -> JSON:
            if name in self.busy:
                raise Conflict(f"job default/{name} was deleted and its pods are still stopping")
            return FakeCluster.apply(self, manifest, submit_dir)

        return self._loop.submit(run)


def test_a_submission_is_awaited_and_a_conflict_tried_again_the_waiting_way(tmp_path: Path) -> None:
    cluster = LaterCluster(tmp_path / "pods", busy={"held"})
    assert isinstance(cluster, AppliesLater)
    with serve(create_app(cluster, TOKEN)) as live, httpx.Client(base_url=live.url, headers=AUTH) as api:
        r = api.post(f"{JOBS}/namespaces/default/jobs", json=job_manifest("quick"), params={"submitDir": "/src"})
        assert r.status_code == 201, r.text
        assert r.json()["metadata"]["name"] == "quick" and cluster.submit_dirs[("default", "quick")] == "/src"
        assert cluster.later == ["later"]

        r = api.post(f"{JOBS}/namespaces/default/jobs", json=job_manifest("held"))
        assert r.status_code == 201, r.text
        assert cluster.later == ["later", "later", "apply"]

        r = api.post(f"{JOBS}/namespaces/default/jobs", json={**job_manifest("bad"), "spec": {"tasks": "none"}})
        assert r.status_code == 422 and "tasks" in r.text
        assert [j["name"] for j in cluster.list_jobs()] == ["held", "quick"]
