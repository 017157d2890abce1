"""`caldera simulate --trace ...` as users run it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caldera.sim.presets import PHILLY_TRACE, traces_dir

from .tracefiles import REPO, caldera, openb_files, philly_csv, philly_row


def test_a_malformed_row_is_warned_by_line_and_the_replay_goes_on(tmp_path: Path) -> None:
    path = philly_csv(
        tmp_path,
        [
            philly_row("2017-10-01 00:00:00", 100, 8),
            "2017-10-01 00:00:30,oops,1,1,vc1",
            philly_row("2017-10-01 00:01:00", 100, 16, "vc2"),
            "not,a,row",
        ],
    )
    result = caldera("simulate", "--trace", f"philly:{path}", "--cluster", "preset:philly-64", "-o", "json")
    assert result.code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines == [
        f"caldera: warning: {path}: line 3: duration must be a number and num_gpus an integer (row skipped)",
        f"caldera: warning: {path}: line 5: expected 5 columns, found 3 (row skipped)",
        "caldera: warning: 2 malformed trace rows skipped",
    ]
    report = json.loads(result.stdout)
    jobs = {j["name"]: j for j in report["jobs"]}
    assert set(jobs) == {"philly-2", "philly-4"}
    assert (jobs["philly-2"]["startTime"], jobs["philly-2"]["endTime"]) == (0.0, 100.0)
    assert (jobs["philly-4"]["queue"], jobs["philly-4"]["endTime"]) == ("vc2", 160.0)
    assert len({p["node"] for p in report["pods"] if p["job"] == "philly-4"}) == 2  # 16 GPUs: two 8-GPU nodes


def test_a_missing_trace_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = caldera("simulate", "--trace", f"philly:{tmp_path / 'nope.csv'}")
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "nope.csv: cannot read the trace" in result.stderr


def test_sampling_a_workload_file_is_refused_in_one_line(tmp_path: Path) -> None:
    examples = REPO / "examples" / "simulate"
    result = caldera(
        "simulate",
        "--cluster",
        examples / "gang-cluster.yaml",
        "--workload",
        examples / "gang-workload.yaml",
        "--jobs",
        "1",
    )
    assert result.code == 2 and result.stderr.count("\n") == 1 and "apply to a --trace" in result.stderr


def test_an_unknown_trace_kind_or_preset_is_one_line(tmp_path: Path) -> None:
    bad_kind = caldera("simulate", "--trace", "helios:x.csv")
    assert bad_kind.code == 2 and "'helios' is not a trace kind" in bad_kind.stderr
    path = philly_csv(tmp_path, [philly_row("2017-10-01 00:00:00", 100, 1)])
    bad_preset = caldera("simulate", "--trace", f"philly:{path}", "--cluster", "preset:tiny")
    assert bad_preset.code == 2 and "no preset 'tiny'" in bad_preset.stderr


def test_window_jobs_and_rate_scale_on_the_command_line(tmp_path: Path) -> None:
    path = philly_csv(tmp_path, [philly_row(f"2017-10-01 00:0{i}:00", 10, 1) for i in range(6)])
    result = caldera(
        "simulate", "--trace", f"philly:{path}", "--cluster", "preset:philly-64",
        "--window", "60:", "--jobs", "3", "--rate-scale", "2", "-o", "json",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    assert [(j["name"], j["submitTime"]) for j in json.loads(result.stdout)["jobs"]] == [
        ("philly-3", 0.0),
        ("philly-4", 30.0),
        ("philly-5", 60.0),
    ]


def test_an_alibaba_trace_runs_on_its_own_node_list(tmp_path: Path) -> None:
    pods = openb_files(
        tmp_path,
        ["p0,8000,16384,1,500,,LS,Succeeded,0,100,0", "p1,8000,16384,1,500,,LS,Succeeded,0,100,0"],
        ["n0,16000,65536,1,T4"],
    )
    result = caldera("simulate", "--trace", f"alibaba-openb:{pods}", "-o", "json")
    assert result.code == 0, result.stderr
    report = json.loads(result.stdout)
    assert [(j["startTime"], j["endTime"]) for j in report["jobs"]] == [
        (0.0, 100.0),
        (0.0, 100.0),
    ]  # two halves of a GPU
    assert report["summary"]["gpuUtilization"] == 1.0


@pytest.mark.skipif(not (traces_dir() / PHILLY_TRACE).is_file(), reason="the shared Philly trace is not here")
def test_the_pollux_sample_of_the_real_trace_is_the_same_for_the_same_seed() -> None:
    args = ("simulate", "--trace", "philly", "--sample", "pollux", "--seed", "3", "-o", "json")
    first, second = caldera(*args), caldera(*args)
    assert first.code == 0, first.stderr
    assert first.stdout == second.stdout
    report = json.loads(first.stdout)
    assert len(report["jobs"]) == 160
    assert len({p["node"] for p in report["pods"]}) <= 8  # preset:philly-64
