"""`caldera simulate --trace philly:... --elastic` as users run it."""

from __future__ import annotations

import json
from pathlib import Path

from caldera.sim.speedup import Speedup
from traces.tracefiles import caldera, philly_csv, philly_row


def test_an_elastic_trace_job_grows_into_the_idle_cluster(tmp_path: Path) -> None:
    """One 2-GPU job of 2 hours (Medium) alone on 64 GPUs: elastic from 1 to 8 workers, it takes 8 and
    finishes in 7,200 s ÷ its rate on 8 workers of one node (Speedup(2, 1024).rate(8, 1))."""
    path = philly_csv(tmp_path, [philly_row("2017-10-01 00:00:00", 7200, 2)])
    cmd = ["simulate", "--trace", f"philly:{path}", "--cluster", "preset:philly-64", "-o", "json"]
    rigid, elastic = caldera(*cmd), caldera(*cmd, "--elastic")
    assert rigid.code == 0 and elastic.code == 0, elastic.stderr
    (r,) = json.loads(rigid.stdout)["jobs"]
    (e,) = json.loads(elastic.stdout)["jobs"]
    assert r["endTime"] == 7200.0
    assert abs(e["endTime"] - 7200.0 / Speedup(2, 1024.0).rate(8, 1)) < 1e-6
    assert len({p["name"] for p in json.loads(elastic.stdout)["pods"] if p["job"] == e["name"]}) == 8


def test_elastic_needs_a_philly_trace(tmp_path: Path) -> None:
    result = caldera("simulate", "--trace", "alibaba-openb:x.csv", "--elastic")
    assert result.code == 2 and result.stderr.count("\n") == 1
