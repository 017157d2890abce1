"""Bad input to a running daemon: one line on stderr, a non-zero exit, and nothing changed.

The cases share one daemon (each leaves the state as it found it, which is what is tested):
it holds a finished job and a closed queue, and after every refused command `caldera list`
prints exactly what it printed before, and the queues are as they were.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caldera.client import connect

from .conftest import Caldera, bring_down, job_manifest

pytestmark = pytest.mark.e2e

GANG_TOO_BIG = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: too-big}
spec:
  minAvailable: 3
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        restartPolicy: Never
        containers: [{name: main, command: [python, -c, pass]}]
"""

CASES = {
    "invalid-manifest": (
        ["apply", "-f", "too-big.yaml"],
        "caldera: error: too-big.yaml: spec.minAvailable: 3 is more than the 2 replicas of all tasks",
    ),
    "unknown-job": (["get", "nope"], "caldera: error: job default/nope not found"),
    "unknown-job-deleted": (["delete", "nope"], "caldera: error: job default/nope not found"),
    "closed-queue": (
        ["submit", "pytorch", "--name", "x", "--workers", "1", "--queue", "shut", "--", "python", "-c", "pass"],
        'caldera: error: job x: spec.queue: queue "shut" is Closed; only Open queues accept jobs',
    ),
    "missing-command": (
        ["submit", "pytorch", "--name", "x", "--workers", "1", "--", "no-such-command-xyz"],
        "caldera: error: job x: spec.tasks[0].template.spec.containers[0].command: "
        "command 'no-such-command-xyz' not found on PATH",
    ),
    "plugin-naming-no-task": (
        ["apply", "-f", "typo.yaml"],
        'caldera: error: job typo: spec.plugins: pytorch plugin: --worker=wrker names no task of job "typo"',
    ),
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Caldera, Path, Any]]:
    """A daemon with one finished job and a closed queue; where the cases' manifests are; `caldera list -o json`."""
    cal = Caldera(tmp_path_factory.mktemp("bad-input") / "home")
    files = cal.home.parent
    (files / "too-big.yaml").write_text(GANG_TOO_BIG)
    typo = job_manifest("typo", ["python", "-c", "pass"])
    typo["spec"]["plugins"] = {"pytorch": ["--master=worker", "--worker=wrker"]}
    (files / "typo.yaml").write_text(json.dumps(typo))
    try:
        cal.up()
        # A PyTorch job of one pod (the master alone): it must run, and leave the daemon serving.
        cal.ok("submit", "pytorch", "--name", "done", "--workers", "1", "--", "python", "-c", "print('ok')")
        assert cal.ok("wait", "done", "--timeout", "60") == "job default/done is Completed\n"
        cal.ok("queue", "create", "shut")
        cal.ok("queue", "close", "shut")
        with connect(cal.home) as client:
            assert [q["status"]["state"] for q in client.list_queues()] == ["Open", "Closed"]
        yield cal, files, cal.json("list")
    finally:
        bring_down(cal)


@pytest.mark.parametrize(("args", "error"), CASES.values(), ids=CASES.keys())
def test_bad_input_is_one_line_and_changes_nothing(
    daemon: tuple[Caldera, Path, Any], args: list[str], error: str
) -> None:
    cal, files, jobs = daemon
    with connect(cal.home) as client:
        queues = client.list_queues()
    r = cal.run(*[str(files / a) if a.endswith(".yaml") else a for a in args])
    assert (r.returncode, r.stderr.replace(f"{files}/", "")) == (2, error + "\n"), r.stdout
    assert r.stdout == ""
    assert cal.json("list") == jobs
    with connect(cal.home) as client:
        assert client.list_queues() == queues
    assert sorted(p.name for p in (cal.home / "pods" / "default").iterdir()) == ["done-master-0"]  # no pod started
