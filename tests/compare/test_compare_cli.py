"""`caldera simulate compare` end to end: the table, the report directory, the same numbers twice."""

from __future__ import annotations

import json
from pathlib import Path

from .kit import BUSY, caldera, policy_file

NOT_DETERMINISTIC = ("cpuMsPerCycle", "wallSeconds")


def test_compare_prints_one_row_per_policy(tmp_path: Path) -> None:
    result = caldera("simulate", "compare", "--policies", f"caldera-default,{policy_file(tmp_path)}", *BUSY)
    assert result.code == 0, result.stderr
    for text in ("caldera-default", "no-preempt", "avg JCT", "p99 JCT", "GPU util", "Jain", "CPU ms/cycle"):
        assert text in result.stdout


def test_report_writes_markdown_json_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = caldera(
        "simulate", "compare", "--policies", f"caldera-default,{policy_file(tmp_path)}", *BUSY, "--report", out
    )
    assert result.code == 0, result.stderr
    for name in ("jct_cdf.png", "utilisation.png", "queue_shares.png"):
        data = (out / name).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 5000
    md = (out / "report.md").read_text()
    assert "| policy |" in md and "| caldera-default |" in md and "| no-preempt |" in md
    assert "- cluster: cluster file" in md and "- seed: 0" in md and "- caldera " in md
    assert "![JCT CDF](./jct_cdf.png)" in md
    results = json.loads((out / "results.json").read_text())
    assert [p["policy"] for p in results["policies"]] == ["caldera-default", "no-preempt"]


def numbers(stdout: str) -> list[dict[str, object]]:
    return [{k: v for k, v in p.items() if k not in NOT_DETERMINISTIC} for p in json.loads(stdout)["policies"]]


def test_the_same_inputs_and_seed_give_the_same_numbers(tmp_path: Path) -> None:
    args = ("simulate", "compare", "--policies", f"caldera-default,{policy_file(tmp_path)}", *BUSY, "-o", "json")
    first, second = caldera(*args), caldera(*args)
    assert first.code == second.code == 0
    assert numbers(first.stdout) == numbers(second.stdout)
    assert numbers(first.stdout)[0]["jobs"] == 40


def test_an_unknown_policy_is_one_line_before_anything_runs(tmp_path: Path) -> None:
    result = caldera("simulate", "compare", "--policies", "caldera-default,no-such-policy", *BUSY)
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "no-such-policy" in result.stderr
