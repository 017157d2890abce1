"""The `caldera` command: one module per verb, registered here."""

from __future__ import annotations

import gc
import os
import sys

import click

from caldera import __version__
from caldera.cli.apply import apply
from caldera.cli.common import context
from caldera.cli.completion import completion
from caldera.cli.controller import controller
from caldera.cli.dashboard import dashboard
from caldera.cli.delete import delete
from caldera.cli.describe import describe
from caldera.cli.docs import docs
from caldera.cli.down import down
from caldera.cli.explain import explain
from caldera.cli.get import get
from caldera.cli.kube import kube
from caldera.cli.launch import launch
from caldera.cli.list import list_jobs
from caldera.cli.logs import logs
from caldera.cli.node import node
from caldera.cli.priorityclass import priorityclass
from caldera.cli.queue import queue
from caldera.cli.resume import resume
from caldera.cli.scale import scale
from caldera.cli.simulate import simulate
from caldera.cli.submit import submit
from caldera.cli.suspend import suspend
from caldera.cli.tensorboard import tensorboard
from caldera.cli.top import top
from caldera.cli.up import up
from caldera.cli.wait import wait
from caldera.core.errors import CalderaError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="caldera")
@click.option(
    "--kubeconfig",
    envvar="CALDERA_KUBECONFIG",
    metavar="PATH",
    help="talk to the Kubernetes cluster of this kubeconfig instead of the embedded daemon [env: CALDERA_KUBECONFIG]",
)
@click.pass_context
def cli(ctx: click.Context, kubeconfig: str | None) -> None:
    """caldera: gang-scheduled, elastic, fault-tolerant distributed training."""
    if kubeconfig:
        context(ctx).kubeconfig = kubeconfig


for command in (
    up,
    down,
    submit,
    apply,
    list_jobs,
    get,
    describe,
    explain,
    logs,
    top,
    wait,
    delete,
    suspend,
    resume,
    scale,
    launch,
    queue,
    priorityclass,
    node,
    simulate,
    tensorboard,
    dashboard,
    kube,
    completion,
    docs,
    controller,
):
    cli.add_command(command)


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback."""
    try:
        _main()
    finally:
        # The process ends here. Its last cycle collection would only traverse everything the command built
        # (a second for a large simulation, whose run keeps its whole history) to free memory the OS takes
        # back at once: what exists now is left out of it. Files and connections are closed by their owners.
        gc.freeze()


def _main() -> None:
    try:
        # Out of standalone mode click returns, not raises, the code a command exits with (`ctx.exit(2)`).
        code = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.UsageError as e:
        # Click prints usage, a hint and the error on three lines; scripts and people want one.
        hint = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
        click.echo(f"caldera: error: {e.format_message()}{hint}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        click.echo(f"caldera: error: {e.format_message()}", err=True)
        sys.exit(2 if e.exit_code in (1, 2) else e.exit_code)
    except CalderaError as e:
        click.echo(f"caldera: error: {e}", err=True)
        sys.exit(2)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except Exception as e:  # a bug, not a user error: still one line, the traceback only on request
        if os.environ.get("CALDERA_DEBUG"):
            raise
        click.echo(
            f"caldera: internal error: {type(e).__name__}: {e} (set CALDERA_DEBUG=1 for the traceback)", err=True
        )
        sys.exit(1)
    if isinstance(code, int) and code:
        sys.exit(code)


if __name__ == "__main__":
    main()
