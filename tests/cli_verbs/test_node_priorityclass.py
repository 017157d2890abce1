"""`caldera node list|label|taint` and `caldera priorityclass list|create` over the fake cluster."""

from __future__ import annotations

import json

from caldera.testing.fake_cluster import FakeCluster

from .conftest import Run


def test_label_sets_and_removes_and_keeps_values_unless_overwrite(run: Run, fake: FakeCluster) -> None:
    assert run("node", "label", "node-0", "gpu=a100", "zone=a").stdout == "node/node-0 labeled\n"
    assert fake.nodes[0]["labels"] == {"gpu": "a100", "zone": "a"}
    taken = run("node", "label", "node-0", "gpu=v100")
    assert taken.exit_code == 2 and "has gpu=a100 already: add --overwrite" in taken.stderr
    assert run("node", "label", "node-0", "gpu=v100", "--overwrite").exit_code == 0
    assert run("node", "label", "node-0", "zone-").exit_code == 0
    assert fake.nodes[0]["labels"] == {"gpu": "v100"}
    lines = run("node", "list").stdout.splitlines()
    assert lines[0].split() == ["NAME", "GPUS", "PODS", "LABELS", "TAINTS"]
    assert lines[1].split() == ["node-0", "2", "0", "gpu=v100", "-"]


def test_taint_adds_replaces_and_removes(run: Run, fake: FakeCluster) -> None:
    assert (
        run("node", "taint", "node-0", "dedicated=infra:NoSchedule", "spot:NoExecute").stdout == "node/node-0 tainted\n"
    )
    assert run("node", "taint", "node-0", "dedicated=ml:NoSchedule").exit_code == 0  # same key and effect: replaced
    assert fake.nodes[0]["taints"] == [
        {"key": "spot", "effect": "NoExecute"},
        {"key": "dedicated", "value": "ml", "effect": "NoSchedule"},
    ]
    assert run("node", "taint", "node-0", "spot-").stdout == "node/node-0 untainted\n"
    assert [t["key"] for t in fake.nodes[0]["taints"]] == ["dedicated"]
    missing = run("node", "taint", "node-0", "spot-")
    assert missing.exit_code == 2 and "has no taint spot" in missing.stderr
    assert run("node", "list", "--no-headers").stdout.split()[-1] == "dedicated=ml:NoSchedule"


def test_bad_node_input(run: Run, fake: FakeCluster) -> None:
    r = run("node", "label", "node-9", "a=b")
    assert r.exit_code == 2 and r.stderr == "caldera: error: node node-9 not found (nodes: node-0)\n"
    r = run("node", "taint", "node-0", "gpu=a100")
    assert r.exit_code == 2 and "is not a taint K[=V]:EFFECT" in r.stderr


def test_priorityclass_create_and_list(run: Run, fake: FakeCluster) -> None:
    assert run("priorityclass", "list").stderr.startswith("No PriorityClasses")
    r = run("priorityclass", "create", "high", "--value", "1000", "--preemption-policy", "Never")
    assert r.exit_code == 0 and r.stdout == "priorityclass.scheduling.k8s.io/high created\n"
    assert run("priorityclass", "create", "high", "--value", "1").exit_code == 2
    assert run("priorityclass", "list").stdout.splitlines()[1].split() == ["high", "1000", "False", "Never"]
    assert json.loads(run("priorityclass", "list", "-o", "json").stdout)["items"][0]["value"] == 1000


def test_a_job_naming_a_missing_priority_class_is_refused(run: Run, fake: FakeCluster, tmp_path: object) -> None:
    from .manifests import job, to_yaml

    manifest = job()
    manifest["spec"]["priorityClassName"] = "urgent"  # type: ignore[index]
    r = run("apply", "-f", "-", input=to_yaml(manifest))
    assert r.exit_code == 2
    assert 'spec.priorityClassName: no PriorityClass named "urgent"' in r.stderr and "caldera priorityclass" in r.stderr
    run("priorityclass", "create", "urgent", "--value", "10")
    assert run("apply", "-f", "-", input=to_yaml(manifest)).exit_code == 0
