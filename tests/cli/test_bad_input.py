"""Bad input to `caldera simulate`: exit code 2 and ONE line on stderr naming the file, the field path and the rule.

Each case replaces one of the three inputs (cluster, workload, scheduler config)
of an otherwise good run and runs the real command in its own process.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from .clirun import caldera

CLUSTER = {"nodes": [{"name": "n", "count": 2, "allocatable": {"cpu": "8", "nvidia.com/gpu": "4"}}]}
CONFIG = "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n"


def good_workload() -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"nvidia.com/gpu": "1"}}}
    spec = {
        "tasks": [
            {
                "name": "worker",
                "replicas": 2,
                "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
            }
        ]
    }
    manifest = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "job"}, "spec": spec}
    return {"jobs": [{"submitTime": 0, "duration": 60, "manifest": manifest}]}


def workload_with(change: Callable[[dict[str, Any]], None]) -> str:
    doc = good_workload()
    change(doc)
    return yaml.safe_dump(doc, sort_keys=False)


def workload_with_json(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    doc = good_workload()
    change(doc)
    return doc


def spec(doc: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = doc["jobs"][0]["manifest"]["spec"]
    return result


@dataclass(frozen=True)
class Case:
    file: str  # cluster | workload | config
    text: str | bytes | None  # None: the file does not exist
    path: str  # the field path the error must name ("" for file-level problems)
    rule: str  # a fragment of the rule
    extra: tuple[str, ...] = field(default=())


def case(file: str, text: str | bytes | None, path: str, rule: str, name: str) -> Any:
    return pytest.param(Case(file, text, path, rule), id=f"{file}-{name}")


CASES = [
    # ---- files
    case("cluster", None, "", "cannot read the file", "missing"),
    case("workload", None, "", "cannot read the file", "missing"),
    case("config", None, "", "cannot read the file", "missing"),
    case("cluster", "nodes:\n  - name: n\n   count: 2\n", "", "line 3", "yaml-syntax-error"),
    case("workload", "jobs: [\n", "", "not valid YAML", "yaml-syntax-error"),
    case("config", "actions: [\n", "", "not valid YAML", "yaml-syntax-error"),
    case("cluster", "", "", "must be a mapping", "empty"),
    case("cluster", "- a\n- b\n", "", "must be a mapping", "a-list"),
    case("cluster", b"\xff\xfe\x00\x01", "", "UTF-8", "binary"),
    # ---- CLUSTER.yaml
    case("cluster", "nodez: []\n", "nodez", "unknown field (did you mean nodes?)", "unknown-top-level-field"),
    case("cluster", "nodes: [{name: n}]\n", "nodes[0].allocatable", "is required", "node-without-allocatable"),
    case("cluster", "nodes: [{name: n, allocatable: {cpu: 8x}}]\n", "nodes[0].allocatable.cpu", "suffix", "bad-quantity"),
    case("cluster", "nodes: [{name: n, allocatable: {cpu: '-1'}}]\n", "nodes[0].allocatable.cpu", "negative", "negative-quantity"),
    case("cluster", "nodes: [{name: n, count: 0, allocatable: {cpu: '8'}}]\n", "nodes[0].count", ">= 1", "count-0"),
    case("cluster", "nodes: [{name: n, count: 1.5, allocatable: {cpu: '8'}}]\n", "nodes[0].count", "integer", "count-float"),
    case(
        "cluster",
        "nodes: [{name: n, allocatable: {cpu: '8'}}, {name: n, allocatable: {cpu: '8'}}]\n",
        "nodes[1].name", "defined twice", "duplicate-node",
    ),
    case(
        "cluster",
        "nodes: [{name: n, count: 2, allocatable: {cpu: '8'}}, {name: n-1, allocatable: {cpu: '8'}}]\n",
        "nodes[1].name", "'n-1' is defined twice", "duplicate-node-from-count",
    ),
    case("cluster", "nodes: [{name: Node_1, allocatable: {cpu: '8'}}]\n", "nodes[0].name", "DNS-1123", "bad-node-name"),
    case(
        "cluster",
        "nodes: [{name: n, allocatable: {cpu: '8'}, taints: [{key: a, effect: Sometimes}]}]\n",
        "nodes[0].taints[0].effect", "is not one of", "bad-taint-effect",
    ),
    case(
        "cluster", "nodes: []\nqueues: [{metadata: {name: q}, spec: {weight: -1}}]\n",
        "queues[0].spec.weight", "between 1 and 65535", "queue-weight-negative",
    ),
    case(
        "cluster", "nodes: []\nqueues: [{metadata: {name: q}, spec: {weight: heavy}}]\n",
        "queues[0].spec.weight", "must be an integer", "queue-weight-not-a-number",
    ),
    case(
        "cluster", "nodes: []\nqueues: [{metadata: {name: q}}, {metadata: {name: q}}]\n",
        "queues[1].metadata.name", "defined twice", "duplicate-queue",
    ),
    case("cluster", "nodes: []\npriorityClasses: [{name: high}]\n", "priorityClasses[0].value", "is required", "priority-class-without-value"),
    # ---- WORKLOAD.yaml
    case("workload", "jobz: []\n", "jobz", "unknown field", "unknown-top-level-field"),
    case("workload", workload_with(lambda d: spec(d).update(minAvailable=3)), "jobs[0].manifest.spec.minAvailable", "more than", "min-available-above-replicas"),
    case(
        "workload", workload_with(lambda d: spec(d).update(policies=[{"event": "PodExploded", "action": "RestartJob"}])),
        "jobs[0].manifest.spec.policies[0].event", "unknown event", "unknown-policy-event",
    ),
    case(
        "workload", workload_with(lambda d: spec(d).update(policies=[{"event": "PodFailed", "action": "Reboot"}])),
        "jobs[0].manifest.spec.policies[0].action", "unknown action", "unknown-policy-action",
    ),
    case(
        "workload", workload_with(lambda d: spec(d)["tasks"].append(dict(spec(d)["tasks"][0]))),
        "jobs[0].manifest.spec.tasks[1].name", "duplicate task name", "duplicate-task-names",
    ),
    case(
        "workload", workload_with(lambda d: spec(d).update(policies=[{"exitCode": 0, "action": "RestartJob"}])),
        "jobs[0].manifest.spec.policies[0].exitCode", "must not be 0", "exit-code-0-policy",
    ),
    case(
        "workload", workload_with(lambda d: spec(d).update(policies=[{"event": "PodFailed", "exitCode": 3, "action": "RestartJob"}])),
        "jobs[0].manifest.spec.policies[0]", "both an event and an exitCode", "event-and-exit-code",
    ),
    case("workload", workload_with(lambda d: d["jobs"][0]["manifest"].update(kind="Pod")), "jobs[0].manifest.kind", "must be Job", "wrong-kind"),
    case("workload", workload_with(lambda d: d["jobs"][0].update(manifest="job.yaml")), "jobs[0].manifest", "must be a Volcano Job manifest", "manifest-not-a-mapping"),
    case("workload", workload_with(lambda d: d["jobs"].append(d["jobs"][0])), "jobs[1].manifest.metadata.name", "submitted twice", "duplicate-job"),
    case("workload", workload_with(lambda d: d["jobs"][0].update(duration=".nan")), "jobs[0].duration", "must be a number", "duration-string"),
    case("workload", workload_with(lambda d: d["jobs"][0].update(duration=float("nan"))), "jobs[0].duration", "finite", "duration-nan"),
    case("workload", workload_with(lambda d: d["jobs"][0].update(submitTime=-5)), "jobs[0].submitTime", ">= 0", "negative-submit-time"),
    case("workload", workload_with(lambda d: d["jobs"][0].update(durations={"ps": 10})), "jobs[0].durations.ps", "no task 'ps'", "durations-of-unknown-task"),
    case(
        "workload", workload_with(lambda d: d.update(faults=[{"time": 5, "pod": "job-worker-0", "node": "n-0", "down": True}])),
        "faults[0]", "exactly one of pod or node", "fault-names-pod-and-node",
    ),
    case("workload", workload_with(lambda d: d.update(faults=[{"time": 5, "pod": "job-worker-7", "exitCode": 1}])), "faults[0].pod", "no pod", "fault-on-unknown-pod"),
    case("workload", workload_with(lambda d: d.update(faults=[{"time": 5, "node": "gpu-9", "down": True}])), "faults[0].node", "no node 'gpu-9'", "fault-on-unknown-node"),
    case("workload", workload_with(lambda d: d.update(faults=[{"time": 5, "pod": "job-worker-0"}])), "faults[0]", "exactly one of exitCode or evict", "fault-without-effect"),
    case("workload", workload_with(lambda d: d.update(commands=[{"time": 5, "job": "job", "action": "Explode"}])), "commands[0].action", "is not one of", "command-unknown-action"),
    case("workload", workload_with(lambda d: d.update(commands=[{"time": 5, "job": "nojob", "action": "AbortJob"}])), "commands[0].job", "no job", "command-unknown-job"),
    case("workload", workload_with(lambda d: d.update(commands=[{"job": "job", "action": "AbortJob"}])), "commands[0].time", "is required", "command-without-time"),
    case(
        "workload", workload_with(lambda d: spec(d).update(priorityClassName="urgent")),
        "jobs[0].manifest.spec.priorityClassName", "no PriorityClass 'urgent'", "unknown-priority-class",
    ),
    # ---- the scheduler config
    case("config", "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gangg\n", "tiers[0].plugins[0].name", "unknown plugin", "unknown-plugin"),
    case("config", "actions: enqueue, frobnicate\ntiers:\n- plugins:\n  - name: gang\n", "actions", "unknown action", "unknown-action"),
    case("config", "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enableJobOrder: maybe\n", "tiers[0].plugins[0].enableJobOrder", "true or false", "bad-flag"),
    case("config", "actions: allocate\nconfigurations: 5\n", "configurations", "must be a list", "configurations-not-a-list"),
]  # fmt: skip


def write_inputs(tmp_path: Path, bad: Case) -> dict[str, Path]:
    files = {name: tmp_path / f"{name}.yaml" for name in ("cluster", "workload", "config")}
    files["cluster"].write_text(yaml.safe_dump(CLUSTER))
    files["workload"].write_text(yaml.safe_dump(good_workload()))
    files["config"].write_text(CONFIG)
    target = files[bad.file]
    if bad.text is None:
        target.unlink()
    elif isinstance(bad.text, bytes):
        target.write_bytes(bad.text)
    else:
        target.write_text(bad.text)
    return files


def test_the_good_inputs_run(tmp_path: Path) -> None:
    files = write_inputs(tmp_path, Case("cluster", yaml.safe_dump(CLUSTER), "", ""))
    result = caldera(
        "simulate",
        "--cluster",
        files["cluster"],
        "--workload",
        files["workload"],
        "--scheduler-config",
        files["config"],
    )
    assert (result.code, result.stderr) == (0, "")


@pytest.mark.parametrize("bad", CASES)
def test_bad_input_is_one_line_naming_file_field_and_rule(tmp_path: Path, bad: Case) -> None:
    files = write_inputs(tmp_path, bad)
    result = caldera(
        "simulate",
        "--cluster",
        files["cluster"],
        "--workload",
        files["workload"],
        "--scheduler-config",
        files["config"],
    )
    assert result.code == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1, result.stderr
    line = result.stderr.rstrip("\n")
    assert "Traceback" not in line
    assert line.startswith("caldera: error: ")
    assert f"{files[bad.file]}: {bad.path}" in line
    assert bad.rule in line


def test_queue_weight_zero_reads_as_unset_as_volcanos_webhook_does(tmp_path: Path) -> None:
    files = write_inputs(
        tmp_path, Case("cluster", "nodes: []\nqueues: [{metadata: {name: q}, spec: {weight: 0}}]\n", "", "")
    )
    result = caldera("simulate", "--cluster", files["cluster"], "--workload", files["workload"])
    assert (result.code, result.stderr) == (0, "")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        pytest.param(("--until", "-5"), "--until", id="negative-until"),
        pytest.param(("--until", "soon"), "--until", id="until-not-a-number"),
        pytest.param(("-o", "xml"), "--output", id="unknown-output"),
    ],
)
def test_bad_options_are_one_line_too(tmp_path: Path, args: tuple[str, ...], fragment: str) -> None:
    files = write_inputs(tmp_path, Case("cluster", yaml.safe_dump(CLUSTER), "", ""))
    result = caldera("simulate", "--cluster", files["cluster"], "--workload", files["workload"], *args)
    assert result.code == 2
    assert result.stderr.count("\n") == 1 and fragment in result.stderr


def test_a_directory_for_a_file_is_one_line(tmp_path: Path) -> None:
    files = write_inputs(tmp_path, Case("cluster", yaml.safe_dump(CLUSTER), "", ""))
    result = caldera("simulate", "--cluster", tmp_path, "--workload", files["workload"])
    assert result.code == 2
    assert result.stderr.count("\n") == 1 and str(tmp_path) in result.stderr


JSON_CASES = [
    pytest.param(
        '{"jobs": [\n  {"submitTime": 0,}\n]}\n', "", "line 2, column 20: not valid JSON", id="json-syntax-error"
    ),
    pytest.param(
        json.dumps({"jobs": [{"submitTime": "soon"}]}), "jobs[0].manifest", "is required", id="json-missing-manifest"
    ),
    pytest.param(
        json.dumps({"jobs": [{"submitTime": -1, "manifest": good_workload()["jobs"][0]["manifest"]}]}),
        "jobs[0].submitTime",
        "must be >= 0",
        id="json-negative-time",
    ),
    pytest.param(
        json.dumps(workload_with_json(lambda d: spec(d).update(minAvailable=3))),
        "jobs[0].manifest.spec.minAvailable",
        "more than",
        id="json-min-available-above-replicas",
    ),
]


@pytest.mark.parametrize(("text", "path", "rule"), JSON_CASES)
def test_a_json_workload_is_read_with_json_and_its_errors_name_file_field_and_rule(
    tmp_path: Path, text: str, path: str, rule: str
) -> None:
    files = write_inputs(tmp_path, Case("cluster", yaml.safe_dump(CLUSTER), "", ""))
    workload = tmp_path / "workload.json"
    workload.write_text(text)
    result = caldera("simulate", "--cluster", files["cluster"], "--workload", workload)
    assert result.code == 2, result.stderr
    line = result.stderr.strip()
    assert line.count("\n") == 0 and "Traceback" not in result.stderr
    assert f"{workload}: {path}" in line and rule in line


def test_a_json_workload_gives_the_report_its_yaml_twin_gives(tmp_path: Path) -> None:
    files = write_inputs(tmp_path, Case("cluster", yaml.safe_dump(CLUSTER), "", ""))
    twin = tmp_path / "workload.json"
    twin.write_text(json.dumps(good_workload()))
    reports = [
        caldera("simulate", "--cluster", files["cluster"], "--workload", w, "-o", "json")
        for w in (files["workload"], twin)
    ]
    assert [r.code for r in reports] == [0, 0]
    assert reports[0].stdout == reports[1].stdout and json.loads(reports[0].stdout)["jobs"]
