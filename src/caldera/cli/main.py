"""The `caldera` command: one module per verb, registered here."""

from __future__ import annotations

import sys

import click

from caldera import __version__
from caldera.cli.simulate import simulate
from caldera.core.errors import CalderaError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="caldera")
def cli() -> None:
    """caldera: gang-scheduled, elastic, fault-tolerant distributed training."""


cli.add_command(simulate)


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(2 if e.exit_code in (1, 2) else e.exit_code)
    except CalderaError as e:
        click.echo(f"caldera: error: {e}", err=True)
        sys.exit(2)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
