"""Cluster presets and where traces are looked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from caldera.core.errors import ValidationError
from caldera.core.resources import GPU
from caldera.sim.presets import preset_nodes, traces_dir

from .tracefiles import caldera, openb_files


@pytest.mark.parametrize(("name", "nodes", "gpus"), [("philly-64", 8, 64), ("philly-full", 311, 2488)])
def test_philly_presets_are_8_gpu_nodes(name: str, nodes: int, gpus: int) -> None:
    got, words = preset_nodes(name)
    assert len(got) == nodes
    assert {n.allocatable[GPU] for n in got} == {8000.0}
    assert sum(n.allocatable[GPU] for n in got) / 1000 == gpus
    assert len({n.name for n in got}) == nodes
    assert name in words


def test_the_openb_preset_reads_the_node_list_from_the_traces_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "alibaba-gpu-v2023").mkdir()
    openb_files(tmp_path / "alibaba-gpu-v2023", [], ["n0,96000,393216,8,G2", "n1,32000,262144,2,T4"])
    monkeypatch.setenv("CALDERA_TRACES", str(tmp_path))
    assert traces_dir() == tmp_path
    nodes, words = preset_nodes("openb")
    assert [n.name for n in nodes] == ["n0", "n1"]
    assert "10 GPUs" in words


def test_an_unknown_preset_names_the_presets() -> None:
    with pytest.raises(ValidationError, match=r"no preset 'philly-9'.*philly-64, philly-full, openb"):
        preset_nodes("philly-9")


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("--trace", "philly"), id="philly"),
        pytest.param(("--trace", "alibaba-openb"), id="openb"),
        pytest.param(("--trace", "philly", "--cluster", "preset:openb"), id="openb-preset"),
    ],
)
def test_a_missing_shared_trace_says_to_set_caldera_traces(tmp_path: Path, args: tuple[str, ...]) -> None:
    r = caldera("simulate", *args, env={"CALDERA_TRACES": str(tmp_path / "nowhere")})
    assert r.code == 2 and r.stdout == ""
    assert "set CALDERA_TRACES to the directory that holds" in r.stderr and str(tmp_path / "nowhere") in r.stderr
