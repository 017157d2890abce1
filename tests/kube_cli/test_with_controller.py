"""caldera's CRDs, `caldera controller` and the CLI together: Volcano's four examples, applied with
`caldera --kubeconfig apply`, run to Completed on KWOK nodes, followed with `wait`, `get` and `describe`.

The controller runs for this module only (the other modules of the package expect none). The examples
are Volcano's, with one addition: the KWOK annotations that make their pods end (`run_for`).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from caldera.backends.kube.client import JSON, resource_path
from caldera.cli.main import cli
from caldera.testing.kube import FakeNode, run_for, wait_ready
from caldera.testing.kube.calderactl import start_caldera

pytestmark = pytest.mark.kube

FIXTURES = Path(__file__).parent.parent / "fixtures"
EXAMPLES = {
    "test-job": "volcano/job.yaml",
    "lm-mpi-job": "volcano/mpi-example.yaml",
    "tensorflow-dist-mnist": "volcano/tf-dist-mnist-example.yaml",
    "ctr-volcano": "ctr-volcano.yaml",
}


@pytest.fixture(scope="module")
def controller(plane):
    # Nodes as a kubelet reports them (ephemeral storage too: the CTR example asks for some).
    names = [f"ctl-{i}" for i in range(4)]
    for name in names:
        node = FakeNode(name, cpu="32", memory="256Gi").manifest()
        for field in ("capacity", "allocatable"):
            node["status"][field]["ephemeral-storage"] = "200Gi"
        plane.kube.create(resource_path("v1", "nodes"), node)
    wait_ready(plane, names)
    process = start_caldera(plane)
    yield process
    plane.stop_process("caldera-controller")


@pytest.fixture
def run(plane):
    def invoke(*args: str) -> Result:
        return CliRunner().invoke(cli, ["--kubeconfig", str(plane.kubeconfig), *args], env={"COLUMNS": "200"})

    return invoke


def ending(doc: JSON, seconds: float) -> JSON:
    """The example with KWOK's annotations in every pod template: its pods run `seconds`, then succeed."""
    doc = copy.deepcopy(doc)
    for task in doc["spec"]["tasks"]:
        meta = task["template"].setdefault("metadata", {})
        meta["annotations"] = {**(meta.get("annotations") or {}), **run_for(seconds)}
    return doc


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_volcanos_examples_run_to_completed_through_the_cli(plane, controller, namespace, run, tmp_path, name):
    doc = ending(yaml.safe_load((FIXTURES / EXAMPLES[name]).read_text()), seconds=3)
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(doc))
    applied = run("apply", "-n", namespace, "-f", str(manifest))
    assert applied.exit_code == 0, applied.output
    done = run("wait", name, "-n", namespace, "--for", "Completed", "--timeout", "180")
    assert done.exit_code == 0, done.output
    summary = yaml.safe_load(run("get", name, "-n", namespace, "-o", "yaml").stdout)
    assert summary["phase"] == "Completed"
    assert all(p["node"] for p in summary["pods"]), summary["pods"]  # placed (on any KWOK node of the package)
    succeeded = [p["name"] for p in summary["pods"] if p["phase"] == "Succeeded"]
    # A CompleteJob policy (the MPI master's, the TF workers') ends the job when its task completes:
    # pods still running are stopped and removed then. Otherwise every pod ran to success.
    early = any(p["action"] == "CompleteJob" for t in doc["spec"]["tasks"] for p in t.get("policies") or [])
    assert succeeded if early else len(succeeded) == sum(t["replicas"] for t in doc["spec"]["tasks"]), summary["pods"]
    described = run("describe", name, "-n", namespace)
    assert described.exit_code == 0 and "Events: <none>" not in described.stdout, described.output
