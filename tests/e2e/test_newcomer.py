"""What a newcomer trips on, on a real daemon: bytecode next to the sources, which pod's log `logs` shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Caldera, job_manifest

pytestmark = pytest.mark.e2e


def completed(job: dict[str, object]) -> bool:
    return job["phase"] == "Completed"


def test_pods_write_no_bytecode_next_to_the_sources_they_import(caldera: Caldera, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "helper.py").write_text("VALUE = 42\n")
    # The pod imports a module of the user's and caldera's launcher, as an elastic pod does.
    command = ["python", "-c", "import helper, caldera.launcher.main; print('value', helper.VALUE)"]
    manifest = job_manifest("pyc", command)
    manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["workingDir"] = str(src)
    caldera.up()
    caldera.apply(manifest)
    caldera.wait_job("pyc", completed, "the job to complete")
    assert "value 42" in caldera.pod_log("pyc-worker-0")
    assert not (src / "__pycache__").exists()
    cached = [p.relative_to(caldera.home / "pycache") for p in (caldera.home / "pycache").rglob("*.pyc")]
    assert any(p.name.startswith("helper.") for p in cached), cached
    assert any("launcher" in p.parts and p.name.startswith("main.") for p in cached), cached
