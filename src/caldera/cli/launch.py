"""`caldera launch ... -- COMMAND`: run a training command as one node of an elastic job.

A thin verb: the arguments go, untouched (even `--`), to the launcher's own parser
(`caldera.launcher.main`), so `caldera launch` and `python -m caldera.launcher` (what elastic
pods run) accept the same arguments and behave the same. `caldera launch --help` lists them.
"""

from __future__ import annotations

import click

_RAW = "caldera.launch.argv"


class _Passthrough(click.Command):
    """Hands the launcher the arguments exactly as given (click would drop the `--`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_RAW] = list(args)
        return super().parse_args(ctx, args)


@click.command(
    cls=_Passthrough,
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def launch(ctx: click.Context, args: tuple[str, ...]) -> None:
    """Run COMMAND as one node of an elastic job (etcd rendezvous; see `caldera launch --help`)."""
    from caldera.launcher.main import main  # only this verb pays for the launcher's imports

    main(ctx.meta[_RAW])  # ends the process with the launcher's code
