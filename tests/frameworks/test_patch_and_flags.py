"""Merging patches, and reading plugin flags as Volcano (Go's flag package) writes them."""

from __future__ import annotations

import pytest

from caldera.controller.frameworks import PluginError, PodPatch
from caldera.controller.frameworks.flags import bool_flag, flag, port_flag, role_task

from .builders import make_job, make_task


def test_merge_unites_env_and_files() -> None:
    a = PodPatch(env={"A": "1", "PYTHONUNBUFFERED": "1"}, files={"etc/a": "x\n"})
    b = PodPatch(env={"B": "2", "PYTHONUNBUFFERED": "1"}, files={"etc/b": "y\n"})
    assert a.merge(b) == PodPatch(
        env={"A": "1", "B": "2", "PYTHONUNBUFFERED": "1"}, files={"etc/a": "x\n", "etc/b": "y\n"}
    )


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        pytest.param(PodPatch(env={"RANK": "0"}), PodPatch(env={"RANK": "1"}), "environment variable RANK", id="env"),
        pytest.param(PodPatch(files={"etc/h": "a"}), PodPatch(files={"etc/h": "b"}), "file etc/h", id="file"),
    ],
)
def test_merge_refuses_two_values_for_one_name(a: PodPatch, b: PodPatch, message: str) -> None:
    with pytest.raises(PluginError, match=message):
        a.merge(b)


@pytest.mark.parametrize(
    ("args", "value"),
    [
        pytest.param(("--master=launcher",), "launcher", id="double-dash-equals"),
        pytest.param(("-master=launcher",), "launcher", id="single-dash-equals"),
        pytest.param(("--master", "launcher"), "launcher", id="separate-value"),
        pytest.param(("--worker=w", "--master=m"), "m", id="among-others"),
        pytest.param(("--masters=m",), None, id="other-flag"),
        pytest.param(("master=m",), None, id="not-a-flag"),
        pytest.param((), None, id="absent"),
    ],
)
def test_flag(args: tuple[str, ...], value: str | None) -> None:
    assert flag(args, "master") == value


@pytest.mark.parametrize(
    ("args", "value"),
    [
        pytest.param((), True, id="default"),
        pytest.param(("--inject-hosts-env",), True, id="bare"),
        pytest.param(("--inject-hosts-env=false",), False, id="false"),
        pytest.param(("-inject-hosts-env=0",), False, id="zero"),
        pytest.param(("--inject-hosts-env=True",), True, id="True"),
    ],
)
def test_bool_flag(args: tuple[str, ...], value: bool) -> None:
    assert bool_flag("svc", args, "inject-hosts-env", default=True) is value


def test_bool_flag_refuses_other_words() -> None:
    with pytest.raises(PluginError, match="svc plugin: --inject-hosts-env=maybe is not a boolean"):
        bool_flag("svc", ("--inject-hosts-env=maybe",), "inject-hosts-env", default=True)


@pytest.mark.parametrize("raw", ["abc", "0", "65536", "-1", ""])
def test_port_flag_refuses_what_is_not_a_port(raw: str) -> None:
    with pytest.raises(PluginError, match=rf"pytorch plugin: --port={raw} is not a port number"):
        port_flag("pytorch", (f"--port={raw}",), 23456)


def test_port_flag_default_and_value() -> None:
    assert port_flag("pytorch", (), 23456) == 23456
    assert port_flag("pytorch", ("--port=29500",), 23456) == 29500


def test_role_task_named_explicitly_must_exist() -> None:
    job = make_job(name="j", tasks=[make_task(name="worker")])
    assert role_task(job, "pytorch", (), "master", "master") is None
    assert role_task(job, "pytorch", (), "worker", "worker") == job.spec.tasks[0]
    with pytest.raises(PluginError, match='pytorch plugin: --master=launcher names no task of job "j"'):
        role_task(job, "pytorch", ("--master=launcher",), "master", "master")
