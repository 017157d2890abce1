"""The `caldera` command: one module per verb, registered here and imported only when its verb runs.

A verb's module imports what it needs (the daemon's client, the scheduler, the simulator, the Kubernetes
client...), and importing them all took ~1.3 s of CPU before any verb ran; `caldera list` now imports
what `list` needs. `caldera --help` imports every verb, for their one-line help.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys

import click

from caldera import __version__
from caldera.core.errors import CalderaError

# verb → (its module under caldera.cli, the click command's name in it)
VERBS: dict[str, tuple[str, str]] = {
    "up": ("up", "up"),
    "down": ("down", "down"),
    "submit": ("submit", "submit"),
    "apply": ("apply", "apply"),
    "list": ("list", "list_jobs"),
    "get": ("get", "get"),
    "describe": ("describe", "describe"),
    "explain": ("explain", "explain"),
    "logs": ("logs", "logs"),
    "top": ("top", "top"),
    "wait": ("wait", "wait"),
    "delete": ("delete", "delete"),
    "suspend": ("suspend", "suspend"),
    "resume": ("resume", "resume"),
    "scale": ("scale", "scale"),
    "launch": ("launch", "launch"),
    "queue": ("queue", "queue"),
    "priorityclass": ("priorityclass", "priorityclass"),
    "node": ("node", "node"),
    "simulate": ("simulate", "simulate"),
    "tensorboard": ("tensorboard", "tensorboard"),
    "dashboard": ("dashboard", "dashboard"),
    "kube": ("kube", "kube"),
    "completion": ("completion", "completion"),
    "docs": ("docs", "docs"),
    "controller": ("controller", "controller"),
}


class Verbs(click.Group):
    """The verbs of VERBS, each imported the first time it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(VERBS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in VERBS:
            module, name = VERBS[cmd_name]
            command = getattr(importlib.import_module(f"caldera.cli.{module}"), name)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=Verbs, context_settings={"help_option_names": ["-h", "--help"]})
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
        from caldera.cli.common import context  # what every verb imports anyway; not needed by --help or --version

        context(ctx).kubeconfig = kubeconfig


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
