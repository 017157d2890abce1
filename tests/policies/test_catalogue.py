"""The shipped policies: loadable by name or path, in Volcano's format, and shipped inside the package."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

import pytest

from caldera.core.errors import CalderaError, ValidationError
from caldera.scheduler.policies import POLICIES, load_policy, policy_text
from caldera.scheduler.scheduler import Scheduler


@pytest.mark.parametrize("name", POLICIES)
def test_each_policy_loads_by_name_and_builds_a_scheduler(name: str) -> None:
    config = load_policy(name)
    Scheduler(config)  # every plugin and switch it names exists
    assert config.actions
    assert policy_text(name).lstrip().startswith(f"# {name}:"), "each file says what it is in its first line"


def test_the_files_are_package_data() -> None:
    shipped = {p.name for p in resources.files("caldera.scheduler.policies").iterdir()}
    assert {f"{n}.yaml" for n in POLICIES} <= shipped
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert "**/*.yaml" in pyproject["tool"]["setuptools"]["package-data"]["caldera"], "a wheel carries them"


def test_a_path_loads_a_file_of_the_same_format(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(policy_text("las").replace("las.promote-knob: 8", "las.promote-knob: 2"))
    config = load_policy(str(path))
    las = next(p for tier in config.tiers for p in tier if p.name == "las")
    assert las.arguments["las.promote-knob"] == 2


def test_an_unknown_name_lists_the_policies() -> None:
    with pytest.raises(CalderaError) as e:
        load_policy("tiresias")
    assert all(name in str(e.value) for name in POLICIES)


def test_a_missing_file_is_a_validation_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="cannot read"):
        load_policy(str(tmp_path / "nope.yaml"))


@pytest.mark.parametrize(
    ("name", "actions", "absent"),
    [
        ("fifo-nogang", ("allocate", "backfill"), {"gang", "proportion"}),
        ("volcano-default", ("enqueue", "allocate", "backfill"), {"sla", "las"}),
        ("kube-default", ("allocate", "backfill"), {"gang", "proportion", "binpack"}),
        ("gang-fifo-backfill", ("allocate", "backfill"), {"proportion", "las", "sla"}),
        ("caldera-default", ("allocate", "preempt", "reclaim", "backfill"), {"srtf", "sla", "drf"}),
        ("las", ("enqueue", "allocate", "preempt", "reclaim", "backfill"), {"proportion", "drf"}),
        ("srtf", ("enqueue", "allocate", "preempt", "reclaim", "backfill"), {"proportion", "las"}),
        ("srtf-gpu", ("enqueue", "allocate", "preempt", "reclaim", "backfill"), {"proportion", "las"}),
    ],
)
def test_what_each_policy_is_made_of(name: str, actions: tuple[str, ...], absent: set[str]) -> None:
    config = load_policy(name)
    assert config.actions == actions
    assert not absent & set(config.plugin_names())


def test_volcano_default_is_the_helm_conf() -> None:
    config = load_policy("volcano-default")
    assert [[p.name for p in tier] for tier in config.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"],
    ]
    switches = {p.name: dict(p.switches) for tier in config.tiers for p in tier}
    assert switches["gang"] == {"enablePreemptable": False}
    assert switches["drf"] == {"enablePreemptable": False}


def test_caldera_default_orders_by_service_shares_by_queue_and_consolidates() -> None:
    config = load_policy("caldera-default")
    args = {p.name: dict(p.arguments) for tier in config.tiers for p in tier}
    assert args["las"] == {
        "las.queue-limits": [3250, 7200],
        "las.promote-knob": 8,
        "las.max-loss": 0,
        "las.max-wait": "8h",
    }
    assert args["proportion"] == {"proportion.borrow": True}
    assert {"gang", "binpack", "consolidate"} <= set(args)


def test_the_oracles_are_told_apart_by_gpu_time() -> None:
    args = {p.name: dict(p.arguments) for tier in load_policy("srtf-gpu").tiers for p in tier}
    assert args["srtf"] == {"srtf.gpu-time": True}
    assert "srtf.gpu-time" not in {k for t in load_policy("srtf").tiers for p in t for k in p.arguments}
