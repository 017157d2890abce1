"""A verb's click command class and its one-line failure: what every verb shares, importing only click.

`caldera controller` imports this and not `caldera.cli.common` (rich's console, the daemon's HTTP client,
the cluster API: 0.4 s of CPU the controller's start-up has no use for).
"""

from __future__ import annotations

from typing import Any, NoReturn

import click

from caldera.core.errors import CalderaError


class Verb(click.Command):
    """A command whose CalderaErrors end as one line on stderr and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CalderaError as e:
            fail(ctx, str(e), 2)


def fail(ctx: click.Context, message: str, code: int = 2) -> NoReturn:
    click.echo(f"caldera: error: {message}", err=True)
    ctx.exit(code)
