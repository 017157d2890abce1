"""The CTR parameter-server job, applied as its Volcano manifest: one gang; done when the trainers are.

Its policies (trainer TaskCompleted → CompleteJob) make the job Completed once the trainers
finish, the parameter servers, which would serve for ever, being stopped then.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import REPO, Caldera

pytestmark = pytest.mark.e2e

PODS = ("ctr-volcano-pserver-0", "ctr-volcano-pserver-1", "ctr-volcano-trainer-0", "ctr-volcano-trainer-1")


def test_the_ctr_job_trains_and_stops_its_pservers(caldera: Caldera, tmp_path: Path) -> None:
    caldera.up()
    # Applied from elsewhere: the manifest's relative paths start at its own directory.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    example = REPO / "examples" / "paddle-ps-ctr"
    before = sorted(example.rglob("*"))
    manifest = str(example / "ctr-volcano.yaml")
    assert caldera.ok("apply", "-f", manifest, cwd=elsewhere) == "job.batch.volcano.sh/ctr-volcano created\n"
    waited = caldera.run("wait", "ctr-volcano", "--timeout", "120")
    assert waited.returncode == 0, waited.stdout + waited.stderr + caldera.daemon_log()
    job = caldera.json("get", "ctr-volcano")
    assert (job["phase"], job["retryCount"]) == ("Completed", 0), job
    # The pservers were stopped (removed, as CompleteJob does) and stay listed as they ended (on SIGTERM, 0).
    assert [(p["name"], p["phase"], p["exitCode"], p["reason"]) for p in job["pods"]] == [
        ("ctr-volcano-pserver-0", "Succeeded", 0, "Stopped"),
        ("ctr-volcano-pserver-1", "Succeeded", 0, "Stopped"),
        ("ctr-volcano-trainer-0", "Succeeded", 0, ""),
        ("ctr-volcano-trainer-1", "Succeeded", 0, ""),
    ]

    events = caldera.json("describe", "ctr-volcano")["events"]
    kinds = [(e["kind"], e["object"]) for e in events]
    # The four started together: all bound in one go, before any of them ended.
    binds = [i for i, (kind, _) in enumerate(kinds) if kind == "Bind"]
    assert sorted(kinds[i][1] for i in binds) == list(PODS), events
    first_end = min(i for i, (kind, _) in enumerate(kinds) if kind in ("PodPhase", "PodDeleted"))
    assert max(binds) < first_end, events
    assert any(e["kind"] == "JobPhase" and e["message"] == "4 pods started, minAvailable 4" for e in events)
    # The trainers completed, then the job stopped the pservers.
    ends = [(e["kind"], e["object"]) for e in events if e["kind"] in ("PodPhase", "PodDeleted")]
    assert sorted(ends[:2]) == [("PodPhase", "ctr-volcano-trainer-0"), ("PodPhase", "ctr-volcano-trainer-1")], events
    assert sorted(ends[2:]) == [("PodDeleted", "ctr-volcano-pserver-0"), ("PodDeleted", "ctr-volcano-pserver-1")]
    for pserver in PODS[:2]:
        assert "SIGTERM received, stopping" in caldera.pod_log(pserver)

    assert sorted(example.rglob("*")) == before  # nothing written into the repository (no __pycache__ either)
    for i in (0, 1):
        log = caldera.ok("logs", "ctr-volcano", "-i", f"trainer-{i}")
        auc = re.search(rf"^trainer {i}: held-out auc (0\.\d+) logloss", log, re.MULTILINE)
        assert auc and float(auc.group(1)) >= 0.7, log  # a constant click rate scores 0.5
        assert f"trainer {i} done: auc" in log
