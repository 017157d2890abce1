"""Fixtures for the verbs: a fake cluster handed to every command through the click context."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from caldera.cli.apply import apply
from caldera.cli.common import CliContext
from caldera.cli.dashboard import dashboard
from caldera.cli.delete import delete
from caldera.cli.describe import describe
from caldera.cli.down import down
from caldera.cli.explain import explain
from caldera.cli.get import get
from caldera.cli.list import list_jobs
from caldera.cli.logs import logs
from caldera.cli.node import node
from caldera.cli.priorityclass import priorityclass
from caldera.cli.queue import queue
from caldera.cli.resume import resume
from caldera.cli.scale import scale
from caldera.cli.suspend import suspend
from caldera.cli.tensorboard import tensorboard
from caldera.cli.top import top
from caldera.cli.up import up
from caldera.cli.wait import wait
from caldera.utils.clock import ManualClock

from .fake_daemon import VerbsFake

CREATED = 1_000_000.0  # the fake's clock: when objects are created
NOW = CREATED + 125.0  # the CLI's clock: ages read 2m5s

Run = Callable[..., Result]


@click.group()
def cli() -> None:
    """The verbs as `caldera.cli.main` registers them."""


for command in (
    up,
    down,
    apply,
    delete,
    suspend,
    resume,
    list_jobs,
    get,
    describe,
    explain,
    logs,
    top,
    queue,
    wait,
    scale,
    tensorboard,
    dashboard,
    node,
    priorityclass,
):
    cli.add_command(command)


@pytest.fixture
def fake(tmp_path: Path) -> VerbsFake:
    return VerbsFake(tmp_path / "pods", clock=ManualClock(CREATED))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def run(fake: VerbsFake, clock: ManualClock) -> Run:
    """`run("get", "train")`: the verb over the fake; stdout and stderr apart."""

    def invoke(*args: str, input: str | None = None) -> Result:
        obj = CliContext(cluster=fake, clock=clock)
        return CliRunner().invoke(cli, list(args), obj=obj, input=input, env={"COLUMNS": "200"})

    return invoke
